"""Every distribution declares what it imports.

A module of ``gitvow-proxy`` that imports ``gitvow_gitsmart`` works in this repository's
environment, where everything is installed, and fails for the user who installed the proxy
alone. So each distribution's source is read (its AST, every ``import`` at any depth: an
import inside a function runs as surely as one at the top), and every top-level package it
names must be the distribution's own, the standard library's, or belong to a distribution its
``pyproject.toml`` declares (``dependencies`` or an extra: an optional import guarded by
``ImportError`` is declared as one). Import names are mapped to distributions by
``importlib.metadata.packages_distributions()``; a distribution not installed in this
environment (another tox install set) is skipped.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = sorted(p.parent for p in [ROOT / "core" / "pyproject.toml", *ROOT.glob("enforcement/*/pyproject.toml"),
                                           *ROOT.glob("plugins/*/pyproject.toml")] if p.is_file())


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(project: Path) -> tuple[str, set[str]]:
    """The distribution's name and every distribution it declares (extras included), canonical."""
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [*data.get("dependencies", ())]
    for extra in data.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    names = {_canonical(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]) for requirement in requirements}
    return _canonical(data["name"]), names


def imported(source: Path) -> dict[str, list[str]]:
    """Top-level package → the places (``file:line``) that import it; relative imports left out."""
    found: dict[str, list[str]] = {}
    for path in sorted(source.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.partition(".")[0], []).append(f"{path.relative_to(source.parent)}:{node.lineno}")
    return found


def own_packages(source: Path) -> set[str]:
    return {p.name for p in source.iterdir() if (p / "__init__.py").is_file()} | {
        p.stem for p in source.glob("*.py")}


@pytest.mark.parametrize("project", DISTRIBUTIONS, ids=[p.name for p in DISTRIBUTIONS])
def test_every_import_is_declared(project: Path) -> None:
    name, dependencies = declared(project)
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:  # a tox environment of another install set
        pytest.skip(f"{name} is not installed here, so neither are its dependencies")
    source = project / "src"
    owners = metadata.packages_distributions()
    own = own_packages(source)
    problems = []
    for package, places in sorted(imported(source).items()):
        if package in own or package in sys.stdlib_module_names or package == "__future__":
            continue
        distributions = {_canonical(d) for d in owners.get(package, ())}
        if not distributions and _canonical(package) in dependencies:
            continue  # an optional extra, declared under the name it is imported by, not installed here
        if not distributions:
            problems.append(f"{package} (installed by no distribution here), imported at {', '.join(places[:3])}")
        elif not distributions & (dependencies | {name}):
            problems.append(f"{package} (from {', '.join(sorted(distributions))}), imported at {', '.join(places[:3])}")
    assert not problems, f"{name} imports what its pyproject.toml does not declare:\n  " + "\n  ".join(problems)


def test_the_scan_sees_an_undeclared_import(tmp_path: Path) -> None:
    """The check can fail: a module importing a package its project does not declare is named."""
    project = tmp_path / "gitvow-example"
    (project / "src" / "gitvow_example").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "gitvow-example"\ndependencies = ["gitvow>=1.0"]\n')
    (project / "src" / "gitvow_example" / "__init__.py").write_text(
        "import json\nfrom gitvow.request import Request\n\ndef later():\n    import pluggy\n")
    name, dependencies = declared(project)
    found = imported(project / "src")
    assert (name, dependencies) == ("gitvow-example", {"gitvow"})
    assert set(found) == {"json", "gitvow", "pluggy"}
    owners = metadata.packages_distributions()
    undeclared = {p for p in found if p not in sys.stdlib_module_names
                  and not {_canonical(d) for d in owners.get(p, ())} & dependencies}
    assert undeclared == {"pluggy"}
