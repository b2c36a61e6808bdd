"""Reading GraphQL requests for adapters: graphql-core under size and token limits, cached.

Every GraphQL forge (GitHub, GitLab, Linear) needs the same thing: the top-level fields of
the one operation a request selects, with aliases resolved and fragments followed. Parsing
is the expensive part, so parsed documents are kept in a bounded LRU keyed by their text:
an agent that sends the same document again pays a JSON decode and a dictionary lookup.

graphql-core itself is imported on the first parse, not with this module: importing it
costs a quarter of a second, which the agent hook must not pay for a plain shell command.

A request that cannot be read within the limits raises :class:`GraphQLRefused` with a
short note; adapters turn that into ``unknown`` with their own reason code.
"""

from __future__ import annotations

import json
from _thread import allocate_lock as Lock  # threading.Lock itself, without importing threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from graphql import DocumentNode, FragmentDefinitionNode, OperationDefinitionNode, SelectionSetNode, ValueNode

BODY_LIMIT = 64 * 1024
TOKEN_LIMIT = 10_000
FIELD_LIMIT = 64
CACHE_SIZE = 2048
_NO_DEFAULTS: Mapping[str, Any] = MappingProxyType({})


class GraphQLRefused(ValueError):
    """The request is not one readable GraphQL operation within the limits."""


@dataclass(frozen=True, slots=True)
class TopField:
    """A top-level field of the selected operation. ``name`` is the schema name, not the alias."""

    name: str
    alias: str | None
    arguments: Mapping[str, ValueNode]

    def argument(self, name: str, variables: Mapping[str, Any] | None = None) -> Any:
        """The argument's value with variables substituted, or None if absent."""
        node = self.arguments.get(name)
        if node is None:
            return None
        from graphql.utilities import value_from_ast_untyped

        return value_from_ast_untyped(node, dict(variables or {}))


@dataclass(frozen=True, slots=True)
class GraphQLOperation:
    """The operation a request runs: its type (query or mutation) and top-level fields.

    ``defaults`` are the default values its variable definitions declare
    (``mutation($p: String = "PARENT")``): the server uses them for every variable the request
    omits, so a reader must too (:meth:`variables`). ``declared`` names every variable the
    operation declares (None: not known, every given variable is kept).
    """

    kind: str
    name: str | None
    fields: tuple[TopField, ...]
    defaults: Mapping[str, Any] = field(default_factory=lambda: _NO_DEFAULTS)
    declared: frozenset[str] | None = None

    def variables(self, given: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """The variables as the server will execute the operation: ``given`` over the
        document's defaults, only those the operation declares (a server never reads another:
        an undeclared ``$x`` in the document fails validation). A variable sent (even as
        ``null``) replaces its default, as the GraphQL spec's CoerceVariableValues says; an
        omitted one takes it."""
        given = given or {}
        if self.declared is not None and any(name not in self.declared for name in given):
            given = {k: v for k, v in given.items() if k in self.declared}
        if not self.defaults:
            return given
        return {**self.defaults, **given}


@dataclass(frozen=True, slots=True)
class GraphQLRequest:
    """The selected operation and its variables, the document's defaults already applied."""

    operation: GraphQLOperation
    variables: Mapping[str, Any]


def _top_fields(
    selection_set: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode], seen: frozenset[str]
) -> list[TopField]:
    from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode

    out: list[TopField] = []
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            if selection.name.value == "__typename":
                continue
            out.append(
                TopField(
                    selection.name.value,
                    selection.alias.value if selection.alias else None,
                    {arg.name.value: arg.value for arg in selection.arguments or ()},
                )
            )
        elif isinstance(selection, InlineFragmentNode):
            out.extend(_top_fields(selection.selection_set, fragments, seen))
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            if name in seen:
                raise GraphQLRefused(f"fragment {name} spreads itself")
            fragment = fragments.get(name)
            if fragment is None:
                raise GraphQLRefused(f"fragment {name} is not defined")
            out.extend(_top_fields(fragment.selection_set, fragments, seen | {name}))
    return out


def select_operation(document: DocumentNode, operation_name: str | None, *, field_limit: int) -> GraphQLOperation:
    """The one operation a request runs, per the GraphQL spec's operationName rules."""
    from graphql import FragmentDefinitionNode, OperationDefinitionNode, OperationType

    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    if not operations:
        raise GraphQLRefused("the document has no operation")
    if operation_name:
        chosen = [op for op in operations if op.name is not None and op.name.value == operation_name]
        if len(chosen) != 1:
            raise GraphQLRefused("operationName does not name exactly one operation in the document")
        operation = chosen[0]
    elif len(operations) == 1:
        operation = operations[0]
    else:
        raise GraphQLRefused("several operations and no operationName")
    if operation.operation is OperationType.SUBSCRIPTION:
        raise GraphQLRefused("subscriptions are not allowed")
    fields = _top_fields(operation.selection_set, fragments, frozenset())
    if len(fields) > field_limit:
        raise GraphQLRefused(f"more than {field_limit} top-level fields")
    kind = "mutation" if operation.operation is OperationType.MUTATION else "query"
    declared = frozenset(d.variable.name.value for d in operation.variable_definitions or ())
    return GraphQLOperation(kind, operation.name.value if operation.name else None, tuple(fields),
                            _defaults(operation), declared)


def _defaults(operation: OperationDefinitionNode) -> Mapping[str, Any]:
    """``{name: value}`` of the variable definitions that declare a default (constants only,
    so no variables are needed to read them)."""
    from graphql.utilities import value_from_ast_untyped

    found: dict[str, Any] = {}
    for definition in operation.variable_definitions or ():
        if definition.default_value is not None:
            found[definition.variable.name.value] = value_from_ast_untyped(definition.default_value)
    return MappingProxyType(found) if found else _NO_DEFAULTS


class GraphQLReader:
    """Reads GraphQL-over-HTTP bodies under limits, caching parsed documents by content."""

    def __init__(
        self,
        *,
        body_limit: int = BODY_LIMIT,
        token_limit: int = TOKEN_LIMIT,
        field_limit: int = FIELD_LIMIT,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.body_limit = body_limit
        self.token_limit = token_limit
        self.field_limit = field_limit
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str | None], GraphQLOperation | GraphQLRefused] = OrderedDict()
        self._lock = Lock()

    def read(self, body: bytes) -> GraphQLRequest:
        """The selected operation and its variables; raises :class:`GraphQLRefused`."""
        if len(body) > self.body_limit:
            raise GraphQLRefused(f"body over the {self.body_limit}-byte limit")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise GraphQLRefused("body is not JSON") from None
        if not isinstance(payload, dict):
            raise GraphQLRefused("body is not one GraphQL request object (batches are not allowed)")
        query = payload.get("query")
        name = payload.get("operationName")
        variables = payload.get("variables")
        if not isinstance(query, str):
            raise GraphQLRefused("no query text (persisted queries are not allowed)")
        if name is not None and not isinstance(name, str):
            raise GraphQLRefused("operationName is not a string")
        if variables is None:
            variables = {}
        elif not isinstance(variables, dict):
            raise GraphQLRefused("variables is not an object")
        operation = self.operation(query, name or None)
        return GraphQLRequest(operation, operation.variables(variables))

    def operation(self, query: str, operation_name: str | None = None) -> GraphQLOperation:
        """Parse (or recall) one document and select its operation."""
        key = (query, operation_name)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
        if cached is None:
            cached = self._parse(query, operation_name)
            with self._lock:
                self._cache[key] = cached
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        if isinstance(cached, GraphQLRefused):
            raise cached
        return cached

    def _parse(self, query: str, operation_name: str | None) -> GraphQLOperation | GraphQLRefused:
        from graphql import GraphQLError, parse

        try:
            document = parse(query, no_location=True, max_tokens=self.token_limit)
        except GraphQLError as exc:
            if "more than" in exc.message and "tokens" in exc.message:
                return GraphQLRefused(f"document over the {self.token_limit}-token limit")
            return GraphQLRefused("document does not parse")
        except RecursionError:
            return GraphQLRefused("document nests too deeply")
        try:
            return select_operation(document, operation_name, field_limit=self.field_limit)
        except GraphQLRefused as exc:
            return exc
