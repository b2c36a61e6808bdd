"""A segment trie over REST path templates: method + path → route, without a regex scan.

GitLab's REST API has hundreds of write routes; trying them one regular expression at a
time costs a few microseconds per request and makes the first match win by accident of
order. A trie walks the path once, one dictionary lookup per segment: a literal segment
beats a parameter (``/projects/import`` before ``/projects/:project``), a parameter beats
a tail wildcard, and the walk backtracks when a literal branch dead-ends, so the most
specific template wins whatever order the table lists them in.

Templates use ``:name`` for one segment and a final ``*`` for zero or more segments.
Segments are compared after percent-decoding (servers decode them before routing), but the
path is split on literal ``/`` first, so ``group%2Fsub%2Fproj`` stays one segment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

WILDCARD = "*"


class TemplateError(ValueError):
    """A route template that cannot be put in the trie (names the template)."""


@dataclass(slots=True)
class _Node[T]:
    literals: dict[str, _Node[T]] = field(default_factory=dict)
    param: _Node[T] | None = None
    param_name: str = ""
    tail: dict[str, T] = field(default_factory=dict)
    tail_template: str = ""
    leaf: dict[str, T] = field(default_factory=dict)
    template: str = ""


@dataclass(frozen=True, slots=True)
class Match[T]:
    """A matched route: its value, its template and the parameters it bound (decoded)."""

    value: T
    template: str
    params: Mapping[str, str]


class SegmentTrie[T]:
    """``(method, template) → value``, looked up by method and decoded path segments."""

    __slots__ = ("_root", "_size")

    def __init__(self) -> None:
        self._root: _Node[T] = _Node()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, method: str, template: str, value: T) -> None:
        """Add one route; a duplicate ``(method, template)`` or a mismatched parameter is an error."""
        segments = split_template(template)
        node = self._root
        for i, segment in enumerate(segments):
            if segment == WILDCARD:
                if i != len(segments) - 1:
                    raise TemplateError(f"{template}: '*' must be the last segment")
                if method in node.tail:
                    raise TemplateError(f"{method} {template}: duplicate route")
                node.tail[method] = value
                node.tail_template = template
                self._size += 1
                return
            if segment.startswith(":"):
                name = segment[1:]
                if node.param is None:
                    node.param = _Node()
                    node.param_name = name
                elif node.param_name != name:
                    raise TemplateError(f"{template}: parameter :{name} where other routes have :{node.param_name}")
                node = node.param
            else:
                node = node.literals.setdefault(segment, _Node())
        if method in node.leaf:
            raise TemplateError(f"{method} {template}: duplicate route")
        node.leaf[method] = value
        node.template = template
        self._size += 1

    def match(self, method: str, segments: list[str]) -> Match[T] | None:
        """The most specific route for ``method`` and already-decoded ``segments``, or None."""
        fast = self._greedy(method, segments)
        if fast is not None:
            return fast
        params: dict[str, str] = {}
        found = self._walk(self._root, method, segments, 0, params)
        if found is None:
            return None
        value, template = found
        return Match(value, template, params)

    def _greedy(self, method: str, segments: list[str]) -> Match[T] | None:
        """The first path of the depth-first walk, without recursion: right for almost every
        request; when it dead-ends, :meth:`_walk` does the full backtracking search."""
        node = self._root
        params: dict[str, str] = {}
        for segment in segments:
            child = node.literals.get(segment)
            if child is None:
                child = node.param
                if child is None:
                    return None
                params[node.param_name] = segment
            node = child
        value = node.leaf.get(method)
        return None if value is None else Match(value, node.template, params)

    def _walk(
        self, node: _Node[T], method: str, segments: list[str], i: int, params: dict[str, str]
    ) -> tuple[T, str] | None:
        if i == len(segments):
            value = node.leaf.get(method)
            if value is not None:
                return value, node.template
            tail = node.tail.get(method)
            return None if tail is None else (tail, node.tail_template)
        segment = segments[i]
        child = node.literals.get(segment)
        if child is not None:
            found = self._walk(child, method, segments, i + 1, params)
            if found is not None:
                return found
        if node.param is not None:
            params[node.param_name] = segment
            found = self._walk(node.param, method, segments, i + 1, params)
            if found is not None:
                return found
            del params[node.param_name]
        tail = node.tail.get(method)
        if tail is not None:
            return tail, node.tail_template
        return None

    def templates(self) -> list[tuple[str, str, T]]:
        """Every ``(method, template, value)``, for tests and ``gitvow explain``."""
        out: list[tuple[str, str, T]] = []
        stack = [self._root]
        while stack:
            node = stack.pop()
            out.extend((m, node.template, v) for m, v in node.leaf.items())
            out.extend((m, node.tail_template, v) for m, v in node.tail.items())
            stack.extend(node.literals.values())
            if node.param is not None:
                stack.append(node.param)
        return sorted(out, key=lambda row: (row[1], row[0]))


def split_template(template: str) -> list[str]:
    """``/projects/:project/issues`` → ``["projects", ":project", "issues"]``."""
    if not template.startswith("/"):
        raise TemplateError(f"{template}: a template starts with '/'")
    segments = template.strip("/").split("/")
    if any(not s for s in segments):
        raise TemplateError(f"{template}: empty segment")
    return segments
