"""Every runtime dependency of every distribution has an upper bound on its major version.

gitvow uses its dependencies' public APIs only (tests/hygiene/test_public_api.py), and a
public API is promised within a major version: mitmproxy 13 or redis-py 9 may change what
gitvow relies on, so an install never takes one before a release of gitvow says it works
with it. The gitvow distributions pin one another to ``>=1.0,<2``: PyPI holds an unrelated
``gitvow`` 0.42 that must never satisfy them. The versions this environment installed fall
within the bounds (that is what the tests ran against).
"""

from __future__ import annotations

import importlib.metadata as metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _pyprojects() -> list[Path]:
    return sorted([ROOT / "core" / "pyproject.toml", *(ROOT / "enforcement").glob("*/pyproject.toml"),
                   *(ROOT / "plugins").glob("*/pyproject.toml")])


def _requirements() -> list[tuple[str, Requirement]]:
    found: list[tuple[str, Requirement]] = []
    for path in _pyprojects():
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        lines = [*project.get("dependencies", []), *(line for extra in project.get("optional-dependencies", {}).values()
                                                     for line in extra)]
        found += [(path.relative_to(ROOT).as_posix(), Requirement(line)) for line in lines]
    return found


def _unbounded(requirement: Requirement) -> bool:
    return not any(spec.operator in ("<", "<=", "==", "~=") for spec in requirement.specifier)


def test_every_distribution_is_read() -> None:
    names = {path.parent.name for path in _pyprojects()}
    assert {"core", "gitvow-proxy", "gitvow-gate", "gitvow-gitsmart", "gitvow-github"} <= names
    assert any(req.name == "mitmproxy" for _, req in _requirements())


def test_every_runtime_dependency_has_an_upper_bound() -> None:
    assert [f"{where}: {req}" for where, req in _requirements() if _unbounded(req)] == []


def test_gitvow_pins_never_admit_the_unrelated_gitvow_0_42() -> None:
    ours = [(where, req) for where, req in _requirements() if req.name.startswith("gitvow")]
    assert ours
    assert [f"{where}: {req}" for where, req in ours if str(req.specifier) != "<2,>=1.0"] == []
    assert not any(req.specifier.contains("0.42") for _, req in ours)


def test_an_unbounded_requirement_is_found() -> None:
    assert _unbounded(Requirement("mitmproxy>=11"))
    assert not _unbounded(Requirement("mitmproxy>=11,<13"))


@pytest.mark.parametrize(("where", "requirement"), _requirements(), ids=lambda value: str(value))
def test_what_is_installed_is_within_the_bounds(where: str, requirement: Requirement) -> None:
    try:
        installed = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{requirement.name} is not installed here")
    assert requirement.specifier.contains(Version(installed), prereleases=True), f"{where}: {requirement} vs {installed}"
