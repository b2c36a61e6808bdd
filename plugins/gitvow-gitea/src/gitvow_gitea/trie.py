"""A segment trie for REST routes: method + path segments → the route that serves them.

Gitea's API has some four hundred routes; trying them one regular expression at a time costs
a scan per request and makes the first match depend on list order. The trie walks the path
once, segment by segment, with the precedence Gitea's own router (chi) uses: a literal
segment before a ``{param}``, a ``{param}`` before a ``{name*}`` that takes the rest of the
path. It backtracks, so ``GET /pulls/{base}/{head}`` and ``POST /pulls/{index}/merge`` live
side by side. A ``/**`` at the end of a template claims a whole subtree (``/admin/**``),
for areas that are refused as a block with one reason.

Templates are written as the swagger description spells them (``/repos/{owner}/{repo}``),
so a route in the table can be compared with the inventory line for line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

ANY_METHOD = "*"


@dataclass(frozen=True, slots=True)
class Match[T]:
    """What a path matched: the route's value and its parameters by name."""

    value: T
    template: str
    params: Mapping[str, str]


@dataclass(slots=True)
class _Leaf[T]:
    value: T
    template: str
    names: tuple[str, ...]


@dataclass(slots=True)
class _Node[T]:
    literal: dict[str, _Node[T]] = field(default_factory=dict)
    param: _Node[T] | None = None
    rest: dict[str, _Leaf[T]] = field(default_factory=dict)
    methods: dict[str, _Leaf[T]] = field(default_factory=dict)
    subtree: dict[str, _Leaf[T]] = field(default_factory=dict)


def split_template(template: str) -> list[str]:
    if not template.startswith("/"):
        raise ValueError(f"route template must start with '/': {template!r}")
    return template.strip("/").split("/") if template.strip("/") else []


class RouteTrie[T]:
    """Routes keyed by method and templated path; :meth:`match` finds the one serving a request."""

    __slots__ = ("_root", "_size")

    def __init__(self, routes: Iterable[tuple[str, str, T]] = ()) -> None:
        self._root: _Node[T] = _Node()
        self._size = 0
        for method, template, value in routes:
            self.add(method, template, value)

    def __len__(self) -> int:
        return self._size

    def add(self, method: str, template: str, value: T) -> None:
        """Register ``value`` for ``method`` on ``template``; a second registration is an error."""
        node = self._root
        names: list[str] = []
        segments = split_template(template)
        for i, segment in enumerate(segments):
            last = i == len(segments) - 1
            if segment == "**":
                if not last:
                    raise ValueError(f"'**' must end the template: {template!r}")
                self._put(node.subtree, method, _Leaf(value, template, tuple(names)), template)
                return
            if segment.startswith("{") and segment.endswith("}"):
                name = segment[1:-1]
                if name.endswith("*"):
                    if not last:
                        raise ValueError(f"{segment} takes the rest of the path and must end {template!r}")
                    names.append(name[:-1])
                    self._put(node.rest, method, _Leaf(value, template, tuple(names)), template)
                    return
                names.append(name)
                if node.param is None:
                    node.param = _Node()
                node = node.param
            else:
                node = node.literal.setdefault(segment, _Node())
        self._put(node.methods, method, _Leaf(value, template, tuple(names)), template)

    def _put(self, table: dict[str, _Leaf[T]], method: str, leaf: _Leaf[T], template: str) -> None:
        if method in table:
            raise ValueError(f"{method} {template} is registered twice (first as {table[method].template})")
        table[method] = leaf
        self._size += 1

    def match(self, method: str, segments: Sequence[str]) -> Match[T] | None:
        """The route serving ``method`` on these (already decoded) path segments, or None."""
        values: list[str] = []
        leaf = self._walk(self._root, segments, 0, method, values)
        if leaf is None:
            return None
        return Match(leaf.value, leaf.template, dict(zip(leaf.names, values, strict=False)))

    def _walk(self, node: _Node[T], segments: Sequence[str], i: int, method: str, values: list[str]) -> _Leaf[T] | None:
        if i == len(segments):
            leaf = node.methods.get(method)
            if leaf is not None:
                return leaf
        else:
            segment = segments[i]
            child = node.literal.get(segment)
            if child is not None:
                leaf = self._walk(child, segments, i + 1, method, values)
                if leaf is not None:
                    return leaf
            if node.param is not None and segment:
                values.append(segment)
                leaf = self._walk(node.param, segments, i + 1, method, values)
                if leaf is not None:
                    return leaf
                values.pop()
            rest = node.rest.get(method)
            if rest is not None and all(segments[i:]):
                values.append("/".join(segments[i:]))
                return rest
        subtree = node.subtree.get(method) or node.subtree.get(ANY_METHOD)
        if subtree is not None and i < len(segments):
            return subtree
        return None
