"""What GitHub says about a staged merge or pull-request creation, and the head a merge is pinned to.

The adapter's part of :mod:`gitvow.approval_context`: REST (``PUT …/pulls/7/merge``, ``POST
…/pulls``, on api.github.com or a GHES ``/api/v3``) and GraphQL (``mergePullRequest``,
``enablePullRequestAutoMerge``, ``createPullRequest``: a node id is resolved to its pull
request or repository by one ``node(id:)`` query). A document with more than one of those
fields has no single subject and no pin: each would need its own head.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote

from gitvow.approval_context import (
    CREATE,
    MERGE,
    ApprovalContext,
    Ask,
    Changes,
    ContextError,
    FileChange,
    PullRequest,
    Subject,
    answer_json,
    kind_of,
    optional_json,
)
from gitvow.graphql import GraphQLReader, GraphQLRefused
from gitvow.request import Request

_READER = GraphQLReader()
_PULL = re.compile(r"/repos/([^/]+)/([^/]+)/pulls(?:/(\d+)/merge)?$")
_NODE = """query($id: ID!) { node(id: $id) { __typename
  ... on PullRequest { number repository { nameWithOwner } }
  ... on Repository { nameWithOwner } } }"""


def fields_of(request: Request) -> dict[str, Any]:
    """A REST request's query and JSON body fields, the body's winning."""
    query = dict(parse_qsl(request.query))
    try:
        data = json.loads(request.body) if request.body else {}
    except (ValueError, UnicodeDecodeError):
        data = {}
    return {**query, **data} if isinstance(data, dict) else query


def graphql_input(body: bytes, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The arguments of the document's one field named in ``names`` (its ``input`` merged in);
    None when there is none or several: a context, and a pin, describe one pull request."""
    try:
        request = _READER.read(body)
    except GraphQLRefused:
        return None
    tops = [top for top in request.operation.fields if top.name in names]
    if len(tops) != 1:
        return None
    found = {name: tops[0].argument(name, request.variables) for name in tops[0].arguments}
    nested = found.get("input")
    return {**found, **nested} if isinstance(nested, dict) else found


def subject(request: Request, operations: tuple[str, ...]) -> Subject | None:
    kind = kind_of(operations)
    if kind is None:
        return None
    path = request.path.rstrip("/")
    if path.endswith("/graphql"):
        return _graphql_subject(kind, request.body)
    match = _PULL.search(path)
    if match is None:
        return None
    repo = f"{match.group(1)}/{match.group(2)}".lower()
    if match.group(3):
        return Subject(MERGE, repo=repo, number=int(match.group(3)))
    fields = fields_of(request)
    return Subject(kind, repo=repo, head=str(fields.get("head", "")), base=str(fields.get("base", "")))


def _graphql_subject(kind: str, body: bytes) -> Subject | None:
    if kind == MERGE:
        found = graphql_input(body, ("mergePullRequest", "enablePullRequestAutoMerge"))
        return Subject(MERGE, node=str(found["pullRequestId"])) if found and found.get("pullRequestId") else None
    found = graphql_input(body, ("createPullRequest",))
    if not found or not found.get("repositoryId"):
        return None
    return Subject(CREATE, node=str(found["repositoryId"]), head=str(found.get("headRefName") or ""),
                   base=str(found.get("baseRefName") or ""))


def _on_ghes(request: Request) -> bool:
    """GHES serves its API under ``/api/`` (REST at ``/api/v3``, GraphQL at ``/api/graphql``)."""
    return request.path.startswith("/api/")


def _node(ask: Ask, request: Request, node: str) -> tuple[str, int | None]:
    graphql = "/api/graphql" if _on_ghes(request) else "/graphql"
    answer = answer_json(ask, graphql, method="POST",
                         body=json.dumps({"query": _NODE, "variables": {"id": node}}).encode())
    found = (answer.get("data") or {}).get("node") if isinstance(answer, dict) else None
    if not isinstance(found, dict):
        raise ContextError(f"the forge does not know node {node}")
    if found.get("__typename") == "PullRequest":
        return str(found["repository"]["nameWithOwner"]).lower(), int(found["number"])
    if found.get("__typename") == "Repository":
        return str(found["nameWithOwner"]).lower(), None
    raise ContextError(f"node {node} is a {found.get('__typename')}, not a pull request or repository")


def _checks(ask: Ask, root: str, sha: str, notes: list[str]) -> str:
    runs = optional_json(ask, f"{root}/commits/{sha}/check-runs?per_page=100", notes)
    status = optional_json(ask, f"{root}/commits/{sha}/status", notes)
    parts = []
    if isinstance(runs, dict) and runs.get("check_runs"):
        outcomes: dict[str, int] = {}
        for run in runs["check_runs"]:
            key = run.get("conclusion") or run.get("status") or "unknown"
            outcomes[key] = outcomes.get(key, 0) + 1
        parts.append(f"{len(runs['check_runs'])} checks: " + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())))
        failing = [r.get("name", "?") for r in runs["check_runs"] if r.get("conclusion") in ("failure", "timed_out")]
        if failing:
            parts.append("failing: " + ", ".join(failing[:10]))
    if isinstance(status, dict) and status.get("statuses"):
        parts.append(f"statuses {status.get('state')}: "
                     + ", ".join(f"{s.get('context')} {s.get('state')}" for s in status["statuses"][:10]))
    return "; ".join(parts) or "none reported"


def _reviews(ask: Ask, root: str, number: int, notes: list[str]) -> str:
    reviews = optional_json(ask, f"{root}/pulls/{number}/reviews?per_page=100", notes)
    if not isinstance(reviews, list) or not reviews:
        return "no reviews"
    latest: dict[str, str] = {}
    for review in reviews:
        who = (review.get("user") or {}).get("login", "?")
        if review.get("state") in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[who] = review["state"]
    if not latest:
        return f"{len(reviews)} comments, no approval"
    return ", ".join(f"{state.lower().replace('_', ' ')} by {who}" for who, state in latest.items())


def _files(items: Any) -> tuple[tuple[FileChange, ...], str]:
    files, patches = [], []
    for item in items if isinstance(items, list) else []:
        name = str(item.get("filename", "?"))
        files.append(FileChange(name, item.get("additions"), item.get("deletions"), str(item.get("status", ""))))
        if item.get("patch"):
            patches.append(f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n{item['patch']}\n")
        elif item.get("status") != "removed":
            patches.append(f"diff --git a/{name} b/{name}\n(no text diff: binary or too large)\n")
    return tuple(files), "".join(patches)


def context(request: Request, what: Subject, ask: Ask) -> ApprovalContext:
    notes: list[str] = []
    repo, number = what.repo, what.number
    if what.node is not None:
        repo, found = _node(ask, request, what.node)
        number = found if what.kind == MERGE else None
    root = f"{'/api/v3' if _on_ghes(request) else ''}/repos/{repo}"
    if what.kind == MERGE:
        pr = answer_json(ask, f"{root}/pulls/{number}")
        head_sha = str(pr["head"]["sha"])
        mergeable = pr.get("mergeable")
        pull = PullRequest(
            number=int(pr["number"]), title=str(pr.get("title", "")), author=str((pr.get("user") or {}).get("login", "")),
            head=str(pr["head"].get("ref", "")), base=str(pr["base"].get("ref", "")), head_sha=head_sha,
            state=str(pr.get("state", "")) + (" (draft)" if pr.get("draft") else ""),
            mergeable={True: "yes", False: "no", None: "not computed yet"}.get(mergeable, str(mergeable))
            + (f" ({pr['mergeable_state']})" if pr.get("mergeable_state") else ""),
            checks=_checks(ask, root, head_sha, notes), reviews=_reviews(ask, root, int(pr["number"]), notes),
            url=str(pr.get("html_url", "")), merged=pr.get("merged") if isinstance(pr.get("merged"), bool) else None,
        )
        files, diff = _files(answer_json(ask, f"{root}/pulls/{number}/files?per_page=100"))
        return ApprovalContext(MERGE, repo=repo, pull=pull, changes=Changes(files, diff, False, pr.get("commits")),
                               head_sha=head_sha, head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    compare = answer_json(ask, f"{root}/compare/{quote(what.base, safe='')}...{quote(what.head, safe=':')}")
    commits = compare.get("commits") or []
    head_sha = str(commits[-1]["sha"]) if commits else ""
    files, diff = _files(compare.get("files"))
    return ApprovalContext(CREATE, repo=repo, changes=Changes(files, diff, False, compare.get("total_commits", len(commits))),
                           head_sha=head_sha, head=what.head, base=what.base, notes=tuple(notes))


def pin(request: Request, head_sha: str) -> bytes | None:
    """REST ``sha``, GraphQL ``expectedHeadOid`` (in the one ``mergePullRequest``); None when
    the request cannot carry it (a creation, two merges in one document, an unreadable body)."""
    body = request.body
    path = request.path.rstrip("/")
    if path.endswith("/graphql"):
        if graphql_input(body, ("mergePullRequest",)) is None:
            return None  # not exactly one merge: the head seen belongs to no single one of them
        return pin_graphql_merge(body, head_sha)
    if request.method != "PUT" or _PULL.search(path) is None or not path.endswith("/merge"):
        return None
    return pin_json(body, "sha", head_sha)


def pin_json(body: bytes, key: str, head_sha: str) -> bytes | None:
    """A JSON object body with ``key`` set to ``head_sha``; as it is when the agent set ``key``;
    None when it is no JSON object."""
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get(key):
        return body
    return json.dumps({**data, key: head_sha}).encode()


def pin_graphql_merge(body: bytes, head_sha: str) -> bytes | None:
    """``expectedHeadOid`` into ``mergePullRequest(input:)``: into the input variable's value
    when the input is a variable, into the literal object when it is written inline."""
    from graphql import parse, print_ast
    from graphql.language import (
        ArgumentNode,
        FieldNode,
        NameNode,
        ObjectFieldNode,
        ObjectValueNode,
        StringValueNode,
        VariableNode,
        Visitor,
        visit,
    )

    try:
        payload = json.loads(body)
        document = parse(payload["query"], no_location=True)
        variables = dict(payload.get("variables") or {})
    except Exception:
        return None
    changed: list[str] = []
    kept: list[str] = []

    class Pin(Visitor):
        def leave_argument(self, node: ArgumentNode, _key: object, _parent: object, _path: object,
                           ancestors: list[object]) -> ArgumentNode | None:
            owner = next((a for a in reversed(ancestors) if isinstance(a, FieldNode)), None)
            if owner is None or owner.name.value != "mergePullRequest" or node.name.value != "input":
                return None
            value = node.value
            if isinstance(value, VariableNode):
                given = variables.get(value.name.value)
                if isinstance(given, dict) and not given.get("expectedHeadOid"):
                    variables[value.name.value] = {**given, "expectedHeadOid": head_sha}
                    changed.append("variable")
                elif isinstance(given, dict):
                    kept.append("variable")
                return None
            if isinstance(value, ObjectValueNode) and not any(f.name.value == "expectedHeadOid" for f in value.fields):
                extra = ObjectFieldNode(name=NameNode(value="expectedHeadOid"), value=StringValueNode(value=head_sha))
                changed.append("literal")
                return ArgumentNode(name=node.name, value=ObjectValueNode(fields=(*value.fields, extra)))
            if isinstance(value, ObjectValueNode):
                kept.append("literal")
            return None

    pinned = visit(document, Pin())
    if not changed:
        return body if kept else None
    return json.dumps({**payload, "query": print_ast(pinned), "variables": variables or payload.get("variables")}).encode()
