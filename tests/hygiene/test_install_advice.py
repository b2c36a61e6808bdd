"""Install advice never resolves PyPI's unrelated ``gitvow`` 0.42.

PyPI's ``gitvow`` is an older, unrelated tool. ``pip install gitvow`` — or ``"gitvow[proxy]"``,
whose unknown extra pip only warns about — installs it. So every piece of advice this project
gives, in what it prints (the shipped code's strings) and in what it documents (README files and
docs/), names the core pinned (``"gitvow>=1"``, ``"gitvow[proxy]>=1"``) or by path (``./core``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The core named as a requirement: ``gitvow`` or ``gitvow[extras]``, with what follows it. Not
#: ``gitvow-github`` (another distribution), not ``./gitvow/core`` (a path).
_CORE = re.compile(r"(?<![\w./-])gitvow(\[[\w,\s{}]*\])?(?![\w/-])(\S*)")


def unpinned(advice: str) -> list[str]:
    """The requirements of the core in the text after each ``pip install`` that carry no version."""
    found = []
    for tail in advice.split("pip install")[1:]:
        command = re.split(r"[`\n;|]|&&|\(or\b", tail, maxsplit=1)[0]
        for match in _CORE.finditer(command):
            if not re.match(r"[\"']?\s*(>=|==|~=|>|<|!=)", match.group(2)):
                found.append("gitvow" + (match.group(1) or ""))
    return found


def _documents() -> list[Path]:
    return sorted({*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *ROOT.glob("*/*/README.md"),
                   *ROOT.glob("core/README.md"), *(ROOT / "examples").rglob("*.md")})


def _strings(path: Path) -> list[str]:
    """Every string constant of a module, f-strings' literal parts joined (as they print)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            found.append("".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                                 for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return found


def _sources() -> list[Path]:
    roots = [ROOT / "core" / "src", *(ROOT / "enforcement").glob("*/src"), *(ROOT / "plugins").glob("*/src"),
             ROOT / "scripts"]
    return sorted(path for root in roots for path in root.rglob("*.py"))


@pytest.mark.parametrize(("advice", "expected"), [
    ('pip install "gitvow[proxy]"', ["gitvow[proxy]"]),
    ("pip install gitvow gitvow-gate", ["gitvow"]),
    ('pip install "gitvow[proxy]>=1" gitvow-github', []),
    ('pip install "gitvow>=1.0,<2" ./gitvow-bitbucket', []),
    ("pip install ./core ./gitvow/core ./plugins/gitvow-github", []),
    ('pip install gitvow-proxy (or pip install "gitvow[gate]")', ["gitvow[gate]"]),
    ("the gitvow proxy; pip install x", []),
])
def test_the_check_reads_advice(advice: str, expected: list[str]) -> None:
    assert unpinned(advice) == expected


def test_documented_advice_pins_the_core() -> None:
    documents = _documents()
    assert len(documents) > 10
    over = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in documents
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if unpinned(line)]
    assert over == [], "name the core as \"gitvow>=1\" (or by path):\n" + "\n".join(over)


def test_printed_advice_pins_the_core() -> None:
    sources = _sources()
    assert len(sources) > 100
    over = [f"{path.relative_to(ROOT)}: {text!r}" for path in sources for text in _strings(path) if unpinned(text)]
    assert over == [], "name the core as \"gitvow>=1\" (or by path):\n" + "\n".join(over)
