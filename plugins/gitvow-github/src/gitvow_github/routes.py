"""Dispatch on method and path segments: a trie over every route of the REST inventory.

Matching walks one node per path segment: a literal child (compared case-insensitively)
first, then the node's ``{param}`` wildcard, so the cost depends on the depth of the path,
not on how many routes GitHub has. Parameters that GitHub lets carry slashes (``{path}`` of
the contents API, ``{ref}`` of git refs, ``{branch}``, …) may span several segments; the
walk backtracks to the shortest span that completes a route.

Percent-escapes are decoded before matching, so ``/repos/o/r/pu%6Clls`` is the route GitHub
would serve, and ``branches/feature%2Fx/protection`` finds its branch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import unquote

from gitvow_github.inventory import READ_METHODS, Route, rest_operation, rest_routes

#: Path parameters whose values may contain ``/``.
TAIL_PARAMS = frozenset({"path", "ref", "branch", "basehead", "dir", "tag"})
#: Paths deeper than this are not matched at all (a write there is ``unknown``).
MAX_SEGMENTS = 48
#: (owner, name) parameter pairs that name the repository a route targets, in preference order.
REPO_PARAMS: tuple[tuple[str, str], ...] = (("owner", "repo"), ("template_owner", "template_repo"))


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One route as matched: its inventory row, the operation it performs, and how to find the repo."""

    route: Route
    operation: str
    reason: str
    params: tuple[str, ...]
    repo_at: tuple[int, int] | None
    details: Mapping[str, object]


@dataclass(slots=True)
class _Node:
    literals: dict[str, _Node] = field(default_factory=dict)
    param: _Node | None = None
    tail: bool = False
    methods: dict[str, Endpoint] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Match:
    """A route matched by a concrete path, with the repository it names (if any)."""

    endpoint: Endpoint
    values: tuple[str, ...]

    @property
    def repo(self) -> str | None:
        at = self.endpoint.repo_at
        if at is None:
            return None
        owner, name = self.values[at[0]], self.values[at[1]]
        if not owner or not name or "/" in owner or "/" in name:
            return None
        return f"{owner}/{name}"


def split_template(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment]


def param_name(segment: str) -> str | None:
    """The parameter a template segment stands for: ``{ref}`` → ``ref``; a compound segment
    such as ``{base}...{head}`` is one wildcard named after its text (``base...head``)."""
    if "{" not in segment:
        return None
    return segment.replace("{", "").replace("}", "")


def _is_tail(name: str) -> bool:
    return name in TAIL_PARAMS or any(part in TAIL_PARAMS for part in re.split(r"[^a-z_]+", name))


def _endpoint(route: Route) -> Endpoint:
    params = tuple(name for name in map(param_name, split_template(route.path)) if name is not None)
    repo_at = None
    for owner, name in REPO_PARAMS:
        if owner in params and name in params:
            repo_at = (params.index(owner), params.index(name))
            break
    rule = rest_operation(route)
    details = MappingProxyType({"route": f"{route.method} {route.path}", "operation_id": route.operation_id})
    return Endpoint(route, rule.operation, rule.reason, params, repo_at, details)


class RouteTrie:
    """Every route of an inventory, keyed by method then path segments."""

    __slots__ = ("_root", "size")

    def __init__(self, routes: Iterable[Route]) -> None:
        self._root = _Node()
        self.size = 0
        for route in routes:
            self._insert(route)

    def _insert(self, route: Route) -> None:
        node = self._root
        for segment in split_template(route.path):
            name = param_name(segment)
            if name is not None:
                if node.param is None:
                    node.param = _Node()
                node = node.param
                if _is_tail(name):
                    node.tail = True
            else:
                node = node.literals.setdefault(segment.lower(), _Node())
        endpoint = _endpoint(route)
        existing = node.methods.get(route.method)
        if existing is not None:
            # Two spellings of one route (``{basehead}`` and ``{base}...{head}``): the first
            # stays, and they must agree on what the route does.
            if existing.operation != endpoint.operation:
                raise ValueError(f"{route.method} {route.path} and {existing.route.path} are one route mapped differently")
            return
        node.methods[route.method] = endpoint
        self.size += 1

    def match(self, method: str, path: str) -> Match | None:
        """The route ``method path`` is, or None. A read method matches any route at the path."""
        if "%" in path:
            path = unquote(path)
        segments = path.split("/")
        lowered = path.lower().split("/")
        if "" in segments:
            segments = [s for s in segments if s]
            lowered = [s for s in lowered if s]
        if len(segments) > MAX_SEGMENTS or len(lowered) != len(segments) or "." in segments or ".." in segments:
            return None
        # Fast path: literal where there is one, else the one-segment wildcard. It is the
        # first branch the full search would try, so when it ends on a route it is the answer.
        node = self._root
        values: list[str] = []
        for i, low in enumerate(lowered):
            child = node.literals.get(low)
            if child is not None:
                node = child
                continue
            param = node.param
            if param is None:
                break
            values.append(segments[i])
            node = param
        else:
            endpoint = self._accept(node, method, ())
            if endpoint is not None:
                return Match(endpoint, tuple(values))
        # Full search: backtracking, multi-segment values for the parameters that allow them.
        values = []
        found = self._walk(self._root, segments, lowered, 0, method, values, [])
        if found is None:
            return None
        return Match(found, tuple(values))

    def _walk(
        self,
        node: _Node,
        segments: list[str],
        lowered: list[str],
        i: int,
        method: str,
        values: list[str],
        spans: list[int],
    ) -> Endpoint | None:
        if i == len(segments):
            return self._accept(node, method, spans)
        child = node.literals.get(lowered[i])
        if child is not None:
            found = self._walk(child, segments, lowered, i + 1, method, values, spans)
            if found is not None:
                return found
        param = node.param
        if param is None:
            return None
        last = len(segments) if param.tail else i + 1
        for j in range(i + 1, last + 1):
            values.append("/".join(segments[i:j]))
            spans.append(j - i)
            found = self._walk(param, segments, lowered, j, method, values, spans)
            if found is not None:
                return found
            values.pop()
            spans.pop()
        return None

    @staticmethod
    def _accept(node: _Node, method: str, spans: Sequence[int]) -> Endpoint | None:
        methods = node.methods
        if not methods:
            return None
        endpoint = methods.get(method)
        if endpoint is None:
            if method not in READ_METHODS:
                return None
            endpoint = methods.get("GET") or next(iter(methods.values()))
        if spans and max(spans) > 1:
            # A multi-segment value is only acceptable for a parameter that may hold slashes.
            for name, span in zip(endpoint.params, spans, strict=True):
                if span > 1 and not _is_tail(name):
                    return None
        return endpoint


_TRIE: RouteTrie | None = None


def trie() -> RouteTrie:
    """The trie over the committed inventory, built on first use (a few milliseconds)."""
    global _TRIE
    if _TRIE is None:
        _TRIE = RouteTrie(rest_routes())
    return _TRIE
