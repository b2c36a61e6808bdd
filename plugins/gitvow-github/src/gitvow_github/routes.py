"""GitHub's REST inventory as routes of the core trie (:mod:`gitvow.routing`).

Matching walks one trie node per path segment: a literal (compared case-insensitively, as
GitHub does) before a ``{param}``, so the cost depends on the depth of the path, not on
how many routes GitHub has. Parameters that GitHub lets carry slashes (``{path}`` of the
contents API, ``{ref}`` of git refs, ``{branch}``, …) may span several segments; the walk
backtracks to the shortest span that completes a route.

Percent-escapes are decoded before splitting, so ``/repos/o/r/pu%6Clls`` is the route
GitHub would serve, and ``branches/feature%2Fx/protection`` finds its branch. (Through the
pipeline a ``%2F``, ``//`` or dot segment never gets here: GitHub treats ``%2F`` as a separator,
so the core refuses such paths first with ``path_not_canonical``; this reader still copes with
them for callers that classify directly, such as ``gh api`` commands in the agent gate.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import unquote

from gitvow.routing import RouteTrie, template_params
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


def _is_tail(name: str) -> bool:
    return name in TAIL_PARAMS or any(part in TAIL_PARAMS for part in re.split(r"[^a-z_]+", name))


def _endpoint(route: Route) -> Endpoint:
    params = template_params(route.path)
    repo_at = None
    for owner, name in REPO_PARAMS:
        if owner in params and name in params:
            repo_at = (params.index(owner), params.index(name))
            break
    rule = rest_operation(route)
    details = MappingProxyType({"route": f"{route.method} {route.path}", "operation_id": route.operation_id})
    return Endpoint(route, rule.operation, rule.reason, params, repo_at, details)


class RestRoutes:
    """Every route of an inventory, keyed by method then path segments."""

    __slots__ = ("_trie",)

    def __init__(self, routes: Iterable[Route]) -> None:
        self._trie: RouteTrie[Endpoint] = RouteTrie(fold_case=True, spanning=_is_tail, fallback_methods=READ_METHODS)
        for route in routes:
            self._insert(route)

    def __len__(self) -> int:
        return len(self._trie)

    def _insert(self, route: Route) -> None:
        endpoint = _endpoint(route)
        existing = self._trie.registered(route.method, route.path)
        if existing is not None:
            # Two spellings of one route (``{basehead}`` and ``{base}...{head}``): the first
            # stays, and they must agree on what the route does.
            if existing.value.operation != endpoint.operation:
                raise ValueError(f"{route.method} {route.path} and {existing.template} are one route mapped differently")
            return
        self._trie.add(route.method, route.path, endpoint)

    def match(self, method: str, path: str) -> Match | None:
        """The route ``method path`` is, or None. A read method matches any route at the path."""
        if "%" in path:
            path = unquote(path)
        if "//" in path or "/." in path or path.startswith(".") or path.count("/") >= MAX_SEGMENTS:
            # Rare, so checked apart: the common path goes to the trie as a string, split once.
            segments = [segment for segment in path.split("/") if segment]
            if len(segments) > MAX_SEGMENTS or "." in segments or ".." in segments:
                return None
            path = "/".join(segments)
        found = self._trie.match(method, path)
        return None if found is None else Match(found.value, found.values)


_TRIE: RestRoutes | None = None


def trie() -> RestRoutes:
    """The trie over the committed inventory, built on first use (a few milliseconds)."""
    global _TRIE
    if _TRIE is None:
        _TRIE = RestRoutes(rest_routes())
    return _TRIE
