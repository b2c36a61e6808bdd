"""Dispatch on method + path segments: one segment trie for every forge adapter's REST table.

A forge has hundreds of REST routes. Trying them one regular expression at a time costs a
scan per request and lets list order decide which of two overlapping templates wins. The
trie walks the path once, one dictionary lookup per segment, so the cost depends on the
depth of the path, not the size of the table, and precedence is structural:

1. a literal segment beats a parameter (``/projects/import`` before ``/projects/{id}``);
2. a parameter takes one segment before it tries several (only *spanning* parameters do);
3. a subtree claim (``/admin/**``) takes what nothing more specific under it takes.

The walk is depth-first and backtracks, so when a literal branch dead-ends the parameter
branch is tried (``POST /pulls/{index}/merge`` and ``GET /pulls/{base}/{head}`` coexist),
and a spanning parameter takes the *shortest* run of segments that completes a route.

Template syntax (templates start with ``/``; the tables keep their forge's own spelling):

``literal``
    matches that segment exactly (case-insensitively with ``fold_case=True``).
``{name}`` or ``:name``
    one non-empty segment. A segment such as ``{base}...{head}`` is one parameter named
    after its text without braces (``base...head``): the trie does not split segments.
``{name*}``
    the rest of the path, one or more non-empty segments; must end the template.
spanning ``{name}``
    a parameter the ``spanning`` predicate accepts (GitHub's ``{path}``, ``{ref}``, …) may
    take one or more segments *anywhere* in the template, even mid-path.
``*`` (last)
    claims the node itself and everything below it (zero or more segments).
``**`` (last)
    claims everything strictly below the node (one or more segments).

Methods are compared exactly; a route registered under :data:`ANY_METHOD` serves any
method a more specific registration at the same place does not. Parameters of different
names may share a position (``/pulls/{index}`` and ``/pulls/{base}``): the slot is the
same, each route keeps its own names. The trie does no percent-decoding, no prefix
stripping and no normalisation: that is the caller's policy, because forges differ on it
(GitHub decodes before splitting, GitLab and Gitea after).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitvow.request import Request

#: The method of a registration that serves every method (``("*", "/admin/**")``).
ANY_METHOD = "*"

_CLAIMS = ("*", "**")


class TemplateError(ValueError):
    """A route the trie cannot hold: a malformed template, or a slot already taken."""

    def __init__(self, template: str, problem: str) -> None:
        super().__init__(f"{template!r}: {problem}")
        self.template = template


@dataclass(frozen=True, slots=True)
class Entry[T]:
    """One registered route: what :meth:`RouteTrie.add` was given, and what its template declares.

    ``params`` are the parameter names in template order; ``spanning[k]`` says whether
    ``params[k]`` may take several segments; ``claim`` is ``"*"``, ``"**"`` or ``""``.
    """

    method: str
    template: str
    value: T
    params: tuple[str, ...]
    spanning: tuple[bool, ...]
    claim: str


@dataclass(slots=True)
class Match[T]:
    """A route matched by a concrete path: its entry and the parameter values it bound.

    ``values`` line up with ``entry.params``; a spanning value joins its segments with ``/``.
    What a subtree claim took is not captured (it is "the rest", by definition unreviewed).
    Not frozen: one is built per request, and a frozen dataclass costs twice as much to build.
    """

    entry: Entry[T]
    values: tuple[str, ...]

    @property
    def value(self) -> T:
        return self.entry.value

    @property
    def template(self) -> str:
        return self.entry.template

    @property
    def params(self) -> dict[str, str]:
        """Parameter values by name, built on each access: read it once, or use :meth:`param`."""
        return dict(zip(self.entry.params, self.values, strict=False))

    def param(self, name: str) -> str | None:
        """One parameter's value, or None if the route has no such parameter (no dict built)."""
        names = self.entry.params
        return self.values[names.index(name)] if name in names else None


@dataclass(slots=True)
class _Node[T]:
    literals: dict[str, _Node[T]] = field(default_factory=dict)
    param: _Node[T] | None = None
    param_name: str = ""
    #: Whether the parameter leading to this node may take several segments (for some route).
    spans: bool = False
    methods: dict[str, Entry[T]] = field(default_factory=dict)
    claims: dict[str, Entry[T]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A template split into trie steps: ``(literal key, None)`` or ``(None, parameter name)``."""

    steps: tuple[tuple[str | None, str | None], ...]
    params: tuple[str, ...]
    spanning: tuple[bool, ...]
    claim: str


def template_params(template: str) -> tuple[str, ...]:
    """The parameter names a template declares, in order (``{base}...{head}`` → ``base...head``)."""
    names = []
    for segment in template.strip("/").split("/"):
        name = _param_name(segment)
        if name is not None:
            names.append(name.removesuffix("*"))
    return tuple(names)


def _param_name(segment: str) -> str | None:
    if segment.startswith(":") and len(segment) > 1:
        return segment[1:]
    if "{" in segment:
        return segment.replace("{", "").replace("}", "")
    return None


class RouteTrie[T]:
    """``(method, template) → value``, looked up by method and path segments.

    Options, each a policy one forge needs and the others leave off:

    - ``fold_case``: literals match case-insensitively (GitHub routes ``/Repos/…``);
      parameter values keep the case they were sent with.
    - ``spanning``: names of parameters whose values may contain ``/`` wherever they
      appear in a template (GitHub's ``{path}``, ``{ref}``, ``{branch}``).
    - ``uniform_names``: one name per parameter position, so a table cannot call one
      segment ``:id`` in one row and ``:project`` in the next (GitLab's table).
    - ``fallback_methods``: methods that, where they have no route of their own, take the
      route another method has there: ``GET``'s if there is one, else the first registered
      (GitHub treats every read alike, and wants the details of the route it reads).
    """

    __slots__ = ("_entries", "_fallback", "_fold_case", "_root", "_spanning", "_uniform_names")

    def __init__(
        self,
        routes: Iterable[tuple[str, str, T]] = (),
        *,
        fold_case: bool = False,
        spanning: Callable[[str], bool] | None = None,
        uniform_names: bool = False,
        fallback_methods: Collection[str] = (),
    ) -> None:
        self._root: _Node[T] = _Node()
        self._entries: list[Entry[T]] = []
        self._fold_case = fold_case
        self._spanning = spanning
        self._uniform_names = uniform_names
        self._fallback = frozenset(fallback_methods)
        for method, template, value in routes:
            self.add(method, template, value)

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[Entry[T]]:
        """Every registration, in the order it was added."""
        return list(self._entries)

    def templates(self) -> list[tuple[str, str, T]]:
        """Every ``(method, template, value)``, by template then method (for tests and ``gitvow explain``)."""
        return sorted(((e.method, e.template, e.value) for e in self._entries), key=lambda row: (row[1], row[0]))

    # -- building -------------------------------------------------------------------------

    def add(self, method: str, template: str, value: T) -> Entry[T]:
        """Register ``value`` for ``method`` on ``template``; a taken slot is a :class:`TemplateError`.

        Two templates that differ only in parameter names are the same slot: a router could
        not tell them apart either.
        """
        parsed = self._parse(template)
        node = self._root
        for key, name in parsed.steps:
            if key is not None:
                node = node.literals.setdefault(key, _Node())
                continue
            if name is None:
                raise RuntimeError("internal error: name unset")
            if node.param is None:
                node.param = _Node()
                node.param_name = name
            elif self._uniform_names and node.param_name != name:
                raise TemplateError(template, f"parameter {name!r} where other routes have {node.param_name!r}")
            node = node.param
        entry = Entry(method, template, value, parsed.params, parsed.spanning, parsed.claim)
        table = node.claims if parsed.claim else node.methods
        existing = table.get(method)
        if existing is not None:
            raise TemplateError(template, f"{method} is registered twice (first as {existing.template})")
        # Mark spanning only once the route is in: a refused route must not change the walk.
        table[method] = entry
        self._mark_spans(parsed)
        self._entries.append(entry)
        return entry

    def registered(self, method: str, template: str) -> Entry[T] | None:
        """The entry already in ``template``'s slot for ``method`` (whatever its parameter names)."""
        parsed = self._parse(template)
        node: _Node[T] | None = self._root
        for key, _ in parsed.steps:
            if node is None:
                raise RuntimeError("internal error: node unset")
            node = node.param if key is None else node.literals.get(key)
            if node is None:
                return None
        if node is None:
            raise RuntimeError("internal error: node unset")
        return (node.claims if parsed.claim else node.methods).get(method)

    def _mark_spans(self, parsed: _Parsed) -> None:
        node = self._root
        k = 0
        for key, _ in parsed.steps:
            if key is not None:
                node = node.literals[key]
                continue
            if node.param is None:
                raise RuntimeError("internal error: node.param unset")
            node = node.param
            if parsed.spanning[k]:
                node.spans = True
            k += 1

    def _parse(self, template: str) -> _Parsed:
        if not template.startswith("/"):
            raise TemplateError(template, "a route template must start with '/'")
        body = template.strip("/")
        segments = body.split("/") if body else []
        steps: list[tuple[str | None, str | None]] = []
        params: list[str] = []
        spanning: list[bool] = []
        claim = ""
        for i, segment in enumerate(segments):
            last = i == len(segments) - 1
            if not segment:
                raise TemplateError(template, "empty segment")
            if segment in _CLAIMS:
                if not last:
                    raise TemplateError(template, f"{segment!r} claims a subtree and must end the template")
                claim = segment
                break
            name = _param_name(segment)
            if name is None:
                steps.append((segment.lower() if self._fold_case else segment, None))
                continue
            rest = name.endswith("*")
            if rest:
                if not last:
                    raise TemplateError(template, f"{segment} takes the rest of the path and must end the template")
                name = name[:-1]
            if name in params:
                raise TemplateError(template, f"parameter {name!r} is named twice")
            steps.append((None, name))
            params.append(name)
            spanning.append(rest or (self._spanning is not None and self._spanning(name)))
        return _Parsed(tuple(steps), tuple(params), tuple(spanning), claim)

    # -- matching -------------------------------------------------------------------------

    def match(self, method: str, path: str | Sequence[str]) -> Match[T] | None:
        """The most specific route for ``method`` on ``path``, or None.

        ``path`` is a list of segments (already decoded, by the caller's rules) or a string,
        which is split on ``/`` as it stands (outer slashes stripped, nothing decoded). An
        empty segment never matches: not as a literal, not as (part of) a parameter value.
        """
        segments, keys = self._split(path)
        # Fast path: a literal where there is one, else the parameter for one segment. It is
        # the first branch the depth-first search tries, so when it ends on a route it is the
        # answer. When it does not, the search resumes at the first place the fast path
        # passed that offers another branch (a parameter beside the literal taken, a
        # parameter that may span, a subtree claim); where there is none, nothing matches.
        node = self._root
        values: list[str] = []
        resume: tuple[_Node[T], int, int] | None = None
        for i, key in enumerate(keys):
            if resume is None and node.claims:
                resume = (node, i, len(values))
            child = node.literals.get(key)
            if child is not None:
                if resume is None and node.param is not None:
                    resume = (node, i, len(values))
                node = child
                continue
            child = node.param
            segment = segments[i]
            if child is None or not segment:
                break
            if resume is None and child.spans:
                resume = (node, i, len(values))
            values.append(segment)
            node = child
        else:
            entry = self._entry_at(node, method)
            if entry is not None:
                return Match(entry, tuple(values))
            if resume is None and node.claims:
                resume = (node, len(keys), len(values))
        if resume is None:
            return None
        node, i, kept = resume
        del values[kept:]
        found = self._walk(node, segments, keys, i, method, values, [])
        return None if found is None else Match(found, tuple(values))

    def _split(self, path: str | Sequence[str]) -> tuple[Sequence[str], Sequence[str]]:
        """The segments of ``path`` and the keys the literals are looked up by (folded or not)."""
        if isinstance(path, str):
            body = path.strip("/")
            segments: Sequence[str] = body.split("/") if body else []
            return segments, (body.lower().split("/") if self._fold_case and body else segments)
        return path, (_folded(path) if self._fold_case else path)

    def _entry_at(self, node: _Node[T], method: str) -> Entry[T] | None:
        """The route ending at ``node`` that serves ``method`` (the fast path's end)."""
        methods = node.methods
        if not methods:
            return None
        entry = methods.get(method) or methods.get(ANY_METHOD)
        if entry is None and method in self._fallback:
            entry = methods.get("GET") or next(iter(methods.values()))
        return entry

    def _resolve(self, table: dict[str, Entry[T]], method: str, wide: list[int]) -> Entry[T] | None:
        """The entry of a (non-empty) table that serves ``method``, if the values fit it."""
        entry = table.get(method) or table.get(ANY_METHOD)
        if entry is None:
            if method not in self._fallback:
                return None
            entry = table.get("GET") or next(iter(table.values()))
        if wide and not _fits(entry, wide):
            return None
        return entry

    def _walk(
        self,
        node: _Node[T],
        segments: Sequence[str],
        keys: Sequence[str],
        i: int,
        method: str,
        values: list[str],
        wide: list[int],
    ) -> Entry[T] | None:
        """Depth-first from ``node`` at ``segments[i]``; ``wide`` lists the positions (in
        ``values``) of values that took several segments, which only spanning parameters may."""
        n = len(segments)
        if i == n:
            return self._walk_end(node, method, wide)
        child = node.literals.get(keys[i])
        if child is not None:
            found = self._walk(child, segments, keys, i + 1, method, values, wide)
            if found is not None:
                return found
        param = node.param
        segment = segments[i]
        if param is not None and segment:
            values.append(segment)
            found = self._walk(param, segments, keys, i + 1, method, values, wide)
            if found is not None:
                return found
            values.pop()
            if param.spans and i + 1 < n:
                found = self._walk_spanning(param, segments, keys, i, method, values, wide)
                if found is not None:
                    return found
        if node.claims:
            return self._resolve(node.claims, method, wide)
        return None

    def _walk_end(self, node: _Node[T], method: str, wide: list[int]) -> Entry[T] | None:
        """At the end of the path: a route of ``node``, else a claim on its whole subtree."""
        if node.methods:
            entry = self._resolve(node.methods, method, wide)
            if entry is not None:
                return entry
        if node.claims:
            claim = self._resolve(node.claims, method, wide)
            if claim is not None and claim.claim == "*":
                return claim
        return None

    def _walk_spanning(
        self,
        param: _Node[T],
        segments: Sequence[str],
        keys: Sequence[str],
        i: int,
        method: str,
        values: list[str],
        wide: list[int],
    ) -> Entry[T] | None:
        """A spanning parameter takes one more segment at a time, shortest first. Below a node
        with nothing under it only the whole rest can complete a route: that alone is tried."""
        n = len(segments)
        wide.append(len(values))
        found: Entry[T] | None = None
        if param.literals or param.param is not None or param.claims:
            for j in range(i + 2, n + 1):
                if not segments[j - 1]:
                    break
                values.append("/".join(segments[i:j]))
                found = self._walk(param, segments, keys, j, method, values, wide)
                if found is not None:
                    return found
                values.pop()
        elif param.methods and all(segments[i + 1 : n]):
            values.append("/".join(segments[i:n]))
            found = self._resolve(param.methods, method, wide)
            if found is not None:
                return found
            values.pop()
        wide.pop()
        return None


def _folded(segments: Sequence[str]) -> Sequence[str]:
    """Lower-cased segments: one ``lower()`` over the joined path when that keeps the split."""
    keys = "/".join(segments).lower().split("/")
    return keys if len(keys) == len(segments) else [s.lower() for s in segments]


def _fits(entry: Entry[object], wide: Sequence[int]) -> bool:
    """Whether every multi-segment value went to a parameter of ``entry`` that may span.

    Routes of different parameter names share a slot, so the walk may give several segments
    to a position that spans for one route and not for the one it reached.
    """
    spanning = entry.spanning
    for k in wide:  # noqa: SIM110 - a loop, not all(<generator>): it runs per candidate route
        if not spanning[k]:
            return False
    return True


# -- a route table: templates → operations ------------------------------------------------

#: ``(request, match) → operations``: for a route whose operations depend on what it sends.
Resolver = Callable[["Request", "Match[Route]"], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Route:
    """One row of a forge's REST table: what ``method`` on ``template`` performs.

    ``operations`` may name several (GitLab's ``PUT …/issues/:iid`` with ``labels`` is
    ``issue.edit`` and ``label.add``); ``("unknown",)`` refuses the route on purpose and
    ``why`` says why (shown to the agent). ``resolve`` settles a route whose operations
    depend on the request (its body, its query): it returns the operations, and raising
    is the adapter's bug, turned into a deny by the pipeline.
    """

    method: str
    template: str
    operations: tuple[str, ...]
    why: str = ""
    resolve: Resolver | None = None

    def operations_for(self, request: Request, match: Match[Route]) -> tuple[str, ...]:
        return self.resolve(request, match) if self.resolve is not None else self.operations


class RouteTable:
    """A :class:`RouteTrie` of :class:`Route` rows: the multi-operation table adapters share.

    Built from rows checked against the vocabulary (an operation it lacks, or an ``unknown``
    without its reason, is a :class:`TemplateError` at import time), and matched by method
    and path segments as the trie matches. :meth:`from_rows` reads the compact text form::

        POST          /repositories/{workspace}/{repo_slug}/pullrequests    pr.create
        PUT,DELETE    /repositories/{workspace}/{repo_slug}/issues/{id}     issue.edit
        *             /addon/**                                             unknown addon
        PUT           /projects/{id}/issues/{iid}                           @issue_update

    columns: methods (comma-separated, ``*`` for any), template, operations (comma-separated)
    or ``@resolver`` (a key of ``resolvers``), then for ``unknown`` a key of ``reasons``.
    """

    __slots__ = ("routes", "trie")

    def __init__(self, routes: Iterable[Route], **options: object) -> None:
        from gitvow.vocabulary import OPERATIONS, UNKNOWN

        self.routes = tuple(routes)
        for route in self.routes:
            for op in route.operations:
                if op not in OPERATIONS:
                    raise TemplateError(route.template, f"{op!r} is not an operation of the vocabulary")
            if not route.operations and route.resolve is None:
                raise TemplateError(route.template, "a route needs operations or a resolver")
            if UNKNOWN in route.operations and not route.why:
                raise TemplateError(route.template, "a route refused on purpose needs its reason (why)")
        self.trie: RouteTrie[Route] = RouteTrie(((r.method, r.template, r) for r in self.routes), **options)  # type: ignore[arg-type]

    @classmethod
    def from_rows(
        cls,
        rows: str,
        *,
        reasons: Mapping[str, str] | None = None,
        resolvers: Mapping[str, Resolver] | None = None,
        **options: object,
    ) -> RouteTable:
        reasons, resolvers = reasons or {}, resolvers or {}
        routes = []
        for line in rows.strip().splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            methods, template, operations, *rest = line.split()
            resolve: Resolver | None = None
            ops: tuple[str, ...]
            if operations.startswith("@"):
                if operations[1:] not in resolvers:
                    raise TemplateError(template, f"no resolver named {operations}")
                resolve, ops = resolvers[operations[1:]], ()
            else:
                ops = tuple(operations.split(","))
            why = ""
            if rest:
                if rest[0] not in reasons:
                    raise TemplateError(template, f"no reason named {rest[0]!r}")
                why = reasons[rest[0]]
            for method in methods.split(","):
                routes.append(Route(method, template, ops, why, resolve))
        return cls(routes, **options)

    def __len__(self) -> int:
        return len(self.routes)

    def match(self, method: str, path: str | Sequence[str]) -> Match[Route] | None:
        """The most specific route for ``method`` on ``path`` (segments, decoded), or None."""
        return self.trie.match(method, path)
