"""GitLab GraphQL (``/api/graphql``): top-level mutation fields → operations.

Parsing is the core's :class:`~gitvow.graphql.GraphQLReader` (graphql-core under body,
token and field limits, parsed documents cached by text). What is GitLab's own:

- Only the mutations of issue 6's list are mapped; every other mutation is ``unknown``
  with reason ``graphql_mutation``. GitLab publishes its schema only from a running
  instance (no registry package carries it), so there is no derived mutation inventory:
  the mapped list is the issue's, and everything else is refused by construction.
- Rails merges query-string parameters *over* body parameters, so ``POST
  /api/graphql?query=mutation…`` with a harmless JSON body would run the URL's document:
  GraphQL parameters in the URL of a POST are refused. A body with a ``_json`` key
  (Rails' spelling of a batch, which GitLab runs as a multiplex) is refused, as are
  batches themselves. Mutations over GET are refused too (GitLab refuses them as well).
- The repositories are every ``projectPath``/``fullPath`` named in any argument; a global
  id of an object that lives in a project (``createNote(noteableId: "gid://gitlab/Issue/5")``)
  is a target that is not resolved, so a repository gate in force refuses the write.
- Notes and descriptions carry quick actions (:mod:`gitvow_gitlab.quick_actions`): a mutation
  that writes one (``createNote``, ``createIssue``, ``updateIssue``, ``mergeRequestCreate``,
  ``mergeRequestUpdate``) is also every operation its quick actions carry. Every string
  literal in those fields' arguments, every string of the variables, and, when a variable is
  not supplied (its default applies), every literal of the document is read; the context is the noteable's global id type when ``createNote`` names
  one (``gid://gitlab/MergeRequest/7``), else every context's operations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from threading import Lock
from typing import Any
from urllib.parse import parse_qs

from gitvow.api_change import merge_changes, unestablished
from gitvow.change import Change, with_operations
from gitvow.comments import graphql_strings, strings_in
from gitvow.graphql import GraphQLOperation, GraphQLReader, GraphQLRefused, TopField
from gitvow.issues import draft_from_mapping
from gitvow.request import Classification, IssueDraft, Request, Target
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_gitlab.changes import graphql_commit_change, graphql_merge_request_change
from gitvow_gitlab.quick_actions import quick_actions
from gitvow_gitlab.rest import ADAPTER, unknown

GRAPHQL_DENIED = "graphql_denied"
GRAPHQL_MUTATION = "graphql_mutation"

#: Mutation field → operation (issue 6). ``mergeRequestSet*`` is matched by prefix.
MUTATIONS: Mapping[str, str] = {
    "mergeRequestCreate": "pr.create",
    "mergeRequestAccept": "pr.merge",
    "mergeRequestUpdate": "pr.edit",
    "createIssue": "issue.create",
    "updateIssue": "issue.edit",
    "createNote": "issue.comment",
    "commitCreate": "ref.write",
}
#: Mutations whose input GitLab reads quick actions from, and the context they run in
#: (None: ``createNote``, whose context is its noteable's type).
TEXT_MUTATIONS: Mapping[str, str | None] = {
    "createNote": None,
    "createIssue": "issue",
    "updateIssue": "issue",
    "mergeRequestCreate": "merge_request",
    "mergeRequestUpdate": "merge_request",
}
#: Global id types of noteables → quick-action context.
_NOTEABLE_CONTEXTS: Mapping[str, str] = {
    "Issue": "issue", "WorkItem": "issue", "Epic": "issue", "MergeRequest": "merge_request", "Commit": "commit",
}
PREFIXES: tuple[tuple[str, str], ...] = (("mergeRequestSet", "pr.edit"),)
#: A ``mergeRequestSet*`` that names one of these is not an edit (a future
#: ``mergeRequestSetAutoMerge`` would arm a merge): it stays unmapped, so refused.
_NOT_AN_EDIT = ("Merge", "Accept")
_BODY_KEYS = frozenset({"query", "operationName", "variables", "extensions"})
_URL_KEYS = frozenset({"query", "operationName", "variables", "extensions", "_json"})


def mutation_operation(field: str) -> str | None:
    """The operation a top-level mutation field performs, or None if it is not mapped."""
    op = MUTATIONS.get(field)
    if op is not None:
        return op
    for prefix, prefixed_op in PREFIXES:
        suffix = field[len(prefix) :]
        if field.startswith(prefix) and suffix and not any(word in suffix for word in _NOT_AN_EDIT):
            return prefixed_op
    return None


def _denied(note: str) -> Classification:
    return unknown(note, code=GRAPHQL_DENIED)


class ResultCache:
    """Classifications of POST bodies seen before, keyed by their exact bytes.

    The core caches parsed documents by text; this caches the whole answer, so an agent that
    repeats a request pays one hash of its body instead of a JSON decode and a walk of the
    fields. Bounded (oldest out first) and only for small bodies; the result is a function
    of the body alone once the URL has been checked, and classifications are immutable.
    """

    def __init__(self, size: int = 1024, max_body: int = 16 * 1024) -> None:
        self.size = size
        self.max_body = max_body
        self._results: dict[bytes, Classification] = {}
        self._lock = Lock()

    def get(self, body: bytes) -> Classification | None:
        return self._results.get(body) if len(body) <= self.max_body else None

    def put(self, body: bytes, result: Classification) -> None:
        if len(body) > self.max_body:
            return
        with self._lock:
            if len(self._results) >= self.size:
                self._results.pop(next(iter(self._results)))
            self._results[body] = result


def classify_graphql(request: Request, reader: GraphQLReader, cache: ResultCache | None = None) -> Classification:
    """Classify one request to GitLab's GraphQL endpoint."""
    url_params = parse_qs(request.query, keep_blank_values=True) if request.query else {}
    if request.method in ("GET", "HEAD"):
        return _classify_get(url_params, reader)
    if request.method != "POST":
        return _denied(f"GraphQL takes GET or POST, not {request.method}")
    if _URL_KEYS & url_params.keys():
        return _denied("GraphQL parameters in the URL of a POST are not allowed")
    if cache is None:
        return _classify_post(request.body, reader)
    result = cache.get(request.body)
    if result is None:
        result = _classify_post(request.body, reader)
        cache.put(request.body, result)
    return result


def _classify_post(body: bytes, reader: GraphQLReader) -> Classification:
    if len(body) > reader.body_limit:
        return _denied(f"body over the {reader.body_limit}-byte limit")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _denied("body is not JSON")
    if not isinstance(payload, dict):
        return _denied("body is not one GraphQL request object (batches are not allowed)")
    extra = payload.keys() - _BODY_KEYS
    if extra:
        return _denied("body has keys other than query, operationName, variables, extensions")
    query, name, variables = payload.get("query"), payload.get("operationName"), payload.get("variables")
    if not isinstance(query, str):
        return _denied("no query text (persisted queries are not allowed)")
    if name is not None and not isinstance(name, str):
        return _denied("operationName is not a string")
    if variables is None:
        variables = {}
    elif not isinstance(variables, dict):
        return _denied("variables is not an object")
    try:
        operation = reader.operation(query, name or None)
    except GraphQLRefused as exc:
        return _denied(str(exc))
    variables = operation.variables(variables)  # the document's defaults, as GitLab applies them
    result = _classify_operation(operation, variables)
    texts = [field for field in operation.fields if field.name in TEXT_MUTATIONS]
    if not texts or result.is_unknown:
        return result
    return _with_quick_actions(result, query, operation, variables)


def _with_quick_actions(
    result: Classification, query: str, operation: GraphQLOperation, variables: Mapping[str, Any]
) -> Classification:
    literals = _literals(operation, variables, query)
    if literals is None:  # pragma: no cover - the reader parsed the same document already
        return _denied("document does not parse")
    contexts = {_context(field, variables) for field in operation.fields if field.name in TEXT_MUTATIONS}
    context = contexts.pop() if len(contexts) == 1 else None
    found = quick_actions([*literals, *strings_in(dict(variables))], context)
    if not found.operations:
        return result
    operations = tuple(dict.fromkeys((*result.operations, *found.operations)))
    note = "; ".join(found.notes) if UNKNOWN in found.operations else result.note
    details = {**result.details, "quick_actions": found.operations}
    return replace(result, operations=operations, note=note, details=details)


def _literals(operation: GraphQLOperation, variables: Mapping[str, Any], query: str) -> list[str] | None:
    """String literals in the arguments of the text mutations, from the parsed (cached) fields.

    A variable the request does not supply may take its default from the document, which the
    fields do not carry: then every literal of the document is read (a second parse).
    """
    from graphql import ListValueNode, ObjectValueNode, StringValueNode, VariableNode

    found: list[str] = []
    stack: list[Any] = [node for field in operation.fields if field.name in TEXT_MUTATIONS
                        for node in field.arguments.values()]
    while stack:
        node = stack.pop()
        if isinstance(node, StringValueNode):
            found.append(node.value)
        elif isinstance(node, ListValueNode):
            stack.extend(node.values)
        elif isinstance(node, ObjectValueNode):
            stack.extend(field.value for field in node.fields)
        elif isinstance(node, VariableNode) and node.name.value not in variables:
            return graphql_strings(query)
    return found


def _context(field: Any, variables: Mapping[str, Any]) -> str | None:
    context = TEXT_MUTATIONS[field.name]
    if context is not None:
        return context
    try:
        value = field.argument("input", variables)
    except Exception:  # a malformed input reads as "context not known": every context's operations
        return None
    noteable = value.get("noteableId") if isinstance(value, dict) else None
    if not isinstance(noteable, str) or not noteable.startswith("gid://gitlab/"):
        return None
    kind = noteable.removeprefix("gid://gitlab/").split("/", 1)[0]
    return _NOTEABLE_CONTEXTS.get(kind)


def _classify_get(params: Mapping[str, list[str]], reader: GraphQLReader) -> Classification:
    if "_json" in params:
        return _denied("batched GraphQL is not allowed")
    queries = params.get("query", [])
    if not queries:
        return Classification((READ,), adapter=ADAPTER, details={"api": "graphql"})
    names = params.get("operationName", [])
    if len(queries) > 1 or len(names) > 1:
        return _denied("repeated GraphQL parameters in the URL")
    if len(queries[0]) > reader.body_limit:
        return _denied(f"query over the {reader.body_limit}-byte limit")
    try:
        operation = reader.operation(queries[0], names[0] if names else None)
    except GraphQLRefused as exc:
        return _denied(str(exc))
    if operation.kind == "mutation":
        return unknown("mutations are not allowed over GET", code=GRAPHQL_MUTATION)
    return Classification((READ,), adapter=ADAPTER, details={"api": "graphql"})


def _classify_operation(operation: GraphQLOperation, variables: Mapping[str, Any]) -> Classification:
    if operation.kind != "mutation":
        return Classification((READ,), adapter=ADAPTER, details={"api": "graphql"})
    if not operation.fields:
        return _denied("a mutation with no fields")
    operations: list[str] = []
    actions: list[str] = []
    issues: list[IssueDraft] = []
    unmapped: list[str] = []
    named: list[str] = []
    ids: list[str] = []
    for field in operation.fields:
        op = mutation_operation(field.name)
        if op is None:
            unmapped.append(field.name)
            continue
        actions.append(op)
        if op not in operations:
            operations.append(op)
        if field.name == "createIssue":
            draft = _issue_draft(field, variables)
            if draft is not None:
                issues.append(draft)
        try:
            _walk({name: field.argument(name, variables) for name in field.arguments}, named, ids)
        except Exception:  # a malformed value names nothing we can trust
            ids.append("")
    repos = tuple(dict.fromkeys(named))
    targets = tuple(dict.fromkeys(Target("gid", gid) for gid in ids))
    repo = repos[0] if len(repos) == 1 else None
    fields = tuple(f.name for f in operation.fields)
    if unmapped:
        return Classification(
            (UNKNOWN,),
            repo=repo,
            adapter=ADAPTER,
            unknown_code=GRAPHQL_MUTATION,
            mode_code=GRAPHQL_MUTATION,
            note=f"GraphQL mutation {', '.join(sorted(set(unmapped)))} is not an operation gitvow allows",
            details={"api": "graphql", "fields": fields},
        )
    change = _commit_change(operation, variables)
    return Classification(
        with_operations(tuple(operations), change) if change is not None else tuple(operations),
        change=change,
        repo=repo,
        repos=repos,
        targets=targets,
        adapter=ADAPTER,
        unknown_code=GRAPHQL_MUTATION,
        mode_code=GRAPHQL_MUTATION,
        details={"api": "graphql", "fields": fields},
        actions=tuple(actions) if len(actions) != len(operations) else (),
        issues=tuple(issues),
    )


_MR_FIELDS = frozenset({"mergeRequestCreate", "mergeRequestUpdate"})


def _commit_change(operation: GraphQLOperation, variables: Mapping[str, Any]) -> Change | None:
    """What the document writes (:mod:`gitvow_gitlab.changes`): its ``commitCreate`` (unestablished
    with several), the heads its ``mergeRequestCreate`` fields name and the new bases of its
    ``mergeRequestUpdate`` fields, together; None when none of them does."""
    found: list[Change] = []
    commits = [field for field in operation.fields if field.name == "commitCreate"]
    if len(commits) > 1:
        found.append(unestablished("a document with several commitCreate fields"))
    for field in operation.fields:
        if field.name not in _MR_FIELDS and not (field.name == "commitCreate" and len(commits) == 1):
            continue
        try:
            value = field.argument("input", variables)
        except Exception:  # a malformed literal: nothing of it can be trusted
            found.append(unestablished(f"the input of {field.name} could not be read"))
            continue
        change = graphql_commit_change(value) if field.name == "commitCreate" \
            else graphql_merge_request_change(field.name, value)
        if change is not None:
            found.append(change)
    if not found:
        return None
    return found[0] if len(found) == 1 else merge_changes(found)


#: Keys whose string value is a project's (or group's) full path.
_PATH_KEYS = frozenset({"projectPath", "fullPath", "groupPath", "targetProjectPath", "sourceProjectPath"})


def _issue_draft(field: TopField, variables: Mapping[str, Any]) -> IssueDraft | None:
    """``createIssue(input: {title, description})`` as GitLab reads it; None if unreadable."""
    try:
        value = field.argument("input", variables)
    except Exception:  # a malformed literal is not an issue anyone can read
        return None
    return draft_from_mapping(value, body="description")


def _walk(value: Any, repos: list[str], ids: list[str], depth: int = 0) -> None:
    """Every project path named in an argument value, and every global id (``gid://…``) in it."""
    if depth > 16:
        ids.append("")
        return
    if isinstance(value, list):
        for item in value:
            _walk(item, repos, ids, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in _PATH_KEYS and isinstance(item, str) and item.strip("/"):
                repos.append(item.strip("/"))
            else:
                _walk(item, repos, ids, depth + 1)
    elif isinstance(value, str) and value.startswith("gid://"):
        kind = value[len("gid://"):].split("/")[1:2]
        if not kind or kind[0] not in _NOT_IN_A_PROJECT:
            ids.append(value)


#: Global-id types that say nothing about which project a write acts on (assignees, labels …).
_NOT_IN_A_PROJECT = frozenset({"User", "Label", "ProjectLabel", "GroupLabel", "Milestone", "Iteration", "Group",
                               "Namespace", "Namespaces::UserNamespace"})
