"""Repository patterns, matched by whole path segments: the one matcher every gate uses.

``[proxy] allowed_repos``, an agent's ``repos`` and ``autonomy`` keys, ``[run_state] paused``
and ``auto_merge_off`` (and the flags set at run time) all name repositories by pattern.
``fnmatch`` lets ``*`` cross a ``/``, so ``org/*`` would also match ``org/sub/app`` — a GitLab
subgroup the operator never named. Here a pattern is split into segments like the path it
matches:

* ``*`` matches any run of characters inside one segment, ``?`` one character, ``[abc]`` /
  ``[!abc]`` one character of (not of) a set — never a ``/``;
* a whole segment ``**`` matches one or more segments (``org/**`` is everything under
  ``org``, at any depth);
* matching is case-insensitive, as forges treat owner and repository names.

Dependency-free and cached: patterns are compiled once per distinct text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_META = frozenset("*?[")


def is_pattern(text: str) -> bool:
    """Whether ``text`` holds a wildcard (otherwise it matches one repository exactly)."""
    return not _META.isdisjoint(text)


def _segment(segment: str) -> str:
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = i
            if end < n and segment[end] == "!":
                end += 1
            if end < n and segment[end] == "]":
                end += 1
            while end < n and segment[end] != "]":
                end += 1
            if end >= n:
                out.append(re.escape(char))  # an unclosed "[" is a literal, as in fnmatch
                continue
            body = segment[i:end].replace("\\", "\\\\")
            i = end + 1
            negate = body.startswith("!")
            if negate:
                body = body[1:]
            out.append(f"(?!/)[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(char))
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regular expression of one repository pattern (lower-cased, anchored)."""
    parts = []
    for segment in pattern.lower().strip("/").split("/"):
        parts.append("[^/]+(?:/[^/]+)*" if segment == "**" else _segment(segment))
    return re.compile("/".join(parts) + r"\Z")


def matches(repo: str, pattern: str) -> bool:
    """Whether ``repo`` (``owner/name`` or ``group/sub/name``) is named by ``pattern``."""
    repo = repo.lower().strip("/")
    if not is_pattern(pattern):
        return repo == pattern.lower().strip("/")
    return compile_pattern(pattern).match(repo) is not None


def matches_any(repo: str, patterns: Iterable[str]) -> bool:
    """Whether any of ``patterns`` names ``repo``."""
    return any(matches(repo, pattern) for pattern in patterns)


class RepoPatterns:
    """A fixed list of patterns, split once into exact names (a set lookup) and wildcards."""

    __slots__ = ("_exact", "_wild")

    def __init__(self, patterns: Iterable[str]) -> None:
        listed = [p for p in patterns]
        self._exact = frozenset(p.lower().strip("/") for p in listed if not is_pattern(p))
        self._wild = tuple(compile_pattern(p) for p in listed if is_pattern(p))

    def __bool__(self) -> bool:
        return bool(self._exact or self._wild)

    def matches(self, repo: str) -> bool:
        repo = repo.lower().strip("/")
        return repo in self._exact or any(rx.match(repo) is not None for rx in self._wild)


__all__ = ["RepoPatterns", "compile_pattern", "is_pattern", "matches", "matches_any"]
