"""GitHub GraphQL documents → operations: one per top-level field of the selected operation.

The core :class:`~gitvow.graphql.GraphQLReader` does the reading (graphql-core, body/token/
field limits, fragments and aliases resolved, an LRU of parsed documents); this module only
names what each top-level field does. A query is ``read``. A mutation field maps through the
reviewed ``graphql_operations.tsv``; a field that is not in it — mistyped, or newer than the
committed schema — is ``unknown`` and denied with ``graphql_mutation`` at every mode. A body
that cannot be read is ``unknown`` with ``graphql_denied``: never forwarded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from threading import Lock
from types import MappingProxyType
from typing import Any

from gitvow.graphql import GraphQLOperation, GraphQLReader, GraphQLRefused, TopField
from gitvow.issues import draft_from_mapping
from gitvow.request import Classification, IssueDraft
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_github.inventory import Rule, graphql_operations
from gitvow_github.targets import graphql_targets

ADAPTER = "github"
GRAPHQL_DENIED = "graphql_denied"
GRAPHQL_MUTATION = "graphql_mutation"
#: Longest field name quoted in a note; GraphQL names are identifiers, this keeps notes short.
NAME_LIMIT = 64
#: ``issue.create`` mutations whose input carries the new thread's ``title`` and ``body``. The
#: others (``convertProjectV2DraftIssueItemToIssue``) take them from an existing object, so
#: ``[issue_shape]`` cannot read them and refuses.
_DRAFTED = frozenset({"createIssue", "createDiscussion"})


def classify_operation(
    operation: GraphQLOperation,
    variables: Mapping[str, Any],
    mapping: Mapping[str, Rule] | None = None,
) -> Classification:
    """Operations for an already-read GraphQL operation."""
    if operation.kind != "mutation":
        # Every repository a query names (agent scope and allowed repositories apply to reads);
        # node ids are left alone: a read is never refused for an unknown repository.
        return Classification(
            (READ,),
            repos=graphql_targets(operation, variables)[0],
            adapter=ADAPTER,
            details=MappingProxyType({"graphql": operation.kind, "fields": tuple(f.name for f in operation.fields)}),
        )
    rules = graphql_operations() if mapping is None else mapping
    operations: list[str] = []
    actions: list[str] = []
    issues: list[IssueDraft] = []
    notes: list[str] = []
    for field in operation.fields:
        rule = rules.get(field.name)
        if rule is None:
            # The name comes from the agent: shown, but never more than a short identifier.
            name = field.name if len(field.name) <= NAME_LIMIT else field.name[:NAME_LIMIT] + "…"
            op, why = UNKNOWN, f"mutation {name} is not in GitHub's schema inventory"
        else:
            op, why = rule.operation, f"mutation {field.name}: {rule.reason}"
        if op == UNKNOWN:
            notes.append(why)
        actions.append(op)
        if op not in operations:
            operations.append(op)
        if field.name in _DRAFTED:
            draft = _issue_draft(field, variables)
            if draft is not None:
                issues.append(draft)
    if not operations:
        return Classification(
            (UNKNOWN,), adapter=ADAPTER, unknown_code=GRAPHQL_DENIED, note="the mutation selects no field"
        )
    repos, targets = graphql_targets(operation, variables)
    from gitvow_github.changes import graphql_change

    change = graphql_change(operation, variables)
    if change is not None:
        from gitvow.change import with_operations

        operations = list(with_operations(tuple(operations), change))
    return Classification(
        tuple(operations),
        repos=repos,
        targets=targets,
        adapter=ADAPTER,
        unknown_code=GRAPHQL_MUTATION,
        mode_code=GRAPHQL_MUTATION,
        note="; ".join(notes),
        details=MappingProxyType({"graphql": "mutation", "fields": tuple(f.name for f in operation.fields)}),
        actions=tuple(actions) if len(actions) != len(operations) else (),
        issues=tuple(issues),
        change=change,
    )


def _issue_draft(field: TopField, variables: Mapping[str, Any]) -> IssueDraft | None:
    """``createIssue``/``createDiscussion(input: {title, body})`` as GitHub reads it; None if unreadable."""
    try:
        value = field.argument("input", variables)
    except Exception:  # a malformed literal is not an issue anyone can read
        return None
    return draft_from_mapping(value)


def classify_graphql(method: str, body: bytes, reader: GraphQLReader, *, content_encoding: str = "") -> Classification:
    """Classify a request to the GraphQL endpoint."""
    method = method.upper()
    if method in ("HEAD", "OPTIONS"):
        return Classification((READ,), adapter=ADAPTER)
    if method != "POST":
        return _denied("GitHub GraphQL documents are sent with POST")
    if content_encoding and content_encoding.lower() != "identity":
        return _denied("compressed GraphQL bodies are not read")
    try:
        request = reader.read(body)
    except GraphQLRefused as exc:
        return _denied(str(exc))
    return classify_operation(request.operation, request.variables)


def _denied(note: str) -> Classification:
    return Classification((UNKNOWN,), adapter=ADAPTER, unknown_code=GRAPHQL_DENIED, mode_code=GRAPHQL_DENIED, note=note)


class DocumentCache:
    """Classifications of whole GraphQL bodies, by content, in a bounded LRU.

    The reader already caches parsed documents by their text, but a repeated request still
    pays a JSON decode and the field mapping. Agents resend identical bodies (the same
    query, the same variables) all the time, so the finished classification is kept too.
    Only small bodies are kept (``max_body`` bytes), so the cache's memory stays bounded by
    ``size * max_body`` whatever agents send. A classification depends only on the body and
    the reader's limits, and the cache belongs to one reader, so an entry is never stale.
    """

    def __init__(self, reader: GraphQLReader, *, size: int = 512, max_body: int = 8 * 1024) -> None:
        self.reader = reader
        self.size = size
        self.max_body = max_body
        self._entries: OrderedDict[bytes, Classification] = OrderedDict()
        self._lock = Lock()

    def classify(self, method: str, body: bytes, *, content_encoding: str = "") -> Classification:
        if method != "POST" or content_encoding or len(body) > self.max_body:
            return classify_graphql(method, body, self.reader, content_encoding=content_encoding)
        entries = self._entries
        with self._lock:
            hit = entries.get(body)
            if hit is not None:
                entries.move_to_end(body)
                return hit
        result = classify_graphql(method, body, self.reader)
        with self._lock:
            entries[body] = result
            if len(entries) > self.size:
                entries.popitem(last=False)
        return result

    def __len__(self) -> int:
        return len(self._entries)
