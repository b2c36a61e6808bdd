"""No check in shipped code is an ``assert``: ``gitvow proxy`` runs under ``python -O``, which strips them.

The proxy runs itself under -O so that mitmproxy's per-message type checks (defined only
``if __debug__``) are off (``gitvow_proxy.optimised``); an operator may run the gate or any
command so too. Under -O an ``assert`` is not run at all, so a check written as one would
silently stop checking. Every distribution's ``src/`` tree (core, enforcement/*, plugins/*)
therefore holds none: a condition that must hold is an ``if`` that raises. Tests keep theirs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _distributions() -> list[Path]:
    return sorted([ROOT / "core" / "src", *(ROOT / "enforcement").glob("*/src"), *(ROOT / "plugins").glob("*/src")])


def asserts(path: Path, name: str) -> list[str]:
    """Every ``assert`` statement of the file, as ``name:line: assert ...``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [f"{name}:{node.lineno}: assert {ast.unparse(node.test)}"
            for node in ast.walk(tree) if isinstance(node, ast.Assert)]


def test_shipped_code_checks_nothing_with_assert() -> None:
    found = [line for src in _distributions() for path in sorted(src.rglob("*.py"))
             for line in asserts(path, path.relative_to(ROOT).as_posix())]
    assert found == []


def test_an_assert_is_found_wherever_it_stands_and_a_docstring_is_not_code(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""An example: ``assert x``.\n\n    assert [s for s in seen] == []\n"""\n'
                       "assert VERSION\n"
                       "def admit(store):\n"
                       "    if store:\n"
                       "        assert store.available, 'down'\n"
                       "    return lambda: None\n")
    assert asserts(planted, "planted.py") == ["planted.py:5: assert VERSION", "planted.py:8: assert store.available"]
