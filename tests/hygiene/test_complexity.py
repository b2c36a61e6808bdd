"""Every function of shipped code stays simple enough to read: radon's cyclomatic complexity <= 20.

Shipped code is the ``src/`` tree of every distribution in this checkout: the core, each
enforcement point (``enforcement/*``) and each forge plugin (``plugins/*``). Tests, benchmarks
and scripts are not shipped. A function over the limit is split (one small function per kind of
input, a table from kind to handler); only generated tables may stand in ``ALLOWED``, each with
the reason it is there.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

LIMIT = 20
ROOT = Path(__file__).resolve().parents[2]

#: ``path relative to the checkout:qualified function name`` → why it may exceed the limit.
#: Generated tables only; anything else here is a debt with the name of who pays it.
ALLOWED: dict[str, str] = {}


def _distributions() -> list[Path]:
    """The ``src/`` directory of every distribution: core, enforcement/*, plugins/*."""
    return sorted([ROOT / "core" / "src",
                   *(ROOT / "enforcement").glob("*/src"),
                   *(ROOT / "plugins").glob("*/src")])


def _blocks(sources: list[Path] | None = None, base: Path = ROOT) -> list[tuple[str, int, int]]:
    """(``path:name``, line, complexity) of every function and method under ``sources``.

    radon lists methods as ``Class.method`` (a class's own figure, an average of its methods, is
    not a function's and is left out); a nested function counts inside its parent.
    """
    found: list[tuple[str, int, int]] = []
    for src in _distributions() if sources is None else sources:
        for path in sorted(src.rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            found.extend((f"{rel}:{block.fullname}", block.lineno, block.complexity)
                         for block in cc_visit(path.read_text(encoding="utf-8")) if isinstance(block, Function))
    return found


@cache
def _shipped() -> list[tuple[str, int, int]]:
    """:func:`_blocks` of the shipped code, read once per session."""
    return _blocks()


def _offenders(blocks: list[tuple[str, int, int]]) -> list[str]:
    return [f"{name} (line {line}) = {complexity}"
            for name, line, complexity in blocks if complexity > LIMIT and name not in ALLOWED]


def test_the_guard_sees_every_distribution() -> None:
    names = {src.parent.name for src in _distributions()}
    assert {"core", "gitvow-proxy", "gitvow-gate", "gitvow-sandbox", "gitvow-github", "gitvow-gitlab",
            "gitvow-gitsmart", "gitvow-linear", "gitvow-gitea", "gitvow-bitbucket"} <= names
    assert len(_shipped()) > 1000  # the whole of it, not an empty directory


def test_every_function_of_shipped_code_is_at_most_complexity_20() -> None:
    over = _offenders(_shipped())
    assert over == [], "split these functions (cyclomatic complexity > 20):\n" + "\n".join(over)


def test_every_allowed_entry_names_a_function_that_exists() -> None:
    """A renamed or removed function leaves no stale pass behind for whatever takes its name."""
    known = {found for found, _, _ in _shipped()}
    stale = [name for name in ALLOWED if name not in known]
    assert stale == [], f"drop these from ALLOWED: {stale}"


def test_the_guard_names_a_complex_method(tmp_path: Path) -> None:
    def module(decisions: int) -> str:
        branches = "\n".join(f"        if x == {i}:\n            return {i}" for i in range(decisions))
        return f"class C:\n    def m(self, x):\n{branches}\n        return -1\n    def n(self):\n        return 0\n"

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(module(LIMIT - 1))
    assert _offenders(_blocks([tmp_path], tmp_path)) == []  # 19 decisions: complexity 20, the limit
    (tmp_path / "pkg" / "mod.py").write_text(module(LIMIT))
    assert _offenders(_blocks([tmp_path], tmp_path)) == ["pkg/mod.py:C.m (line 2) = 21"]
