"""Wire examples of the ``linear`` adapter for the contract kit, written as the SDK sends them.

Documents carry fragment definitions and aliases the way ``@linear/sdk`` does; the near misses
are the shapes an agent could use to smuggle a refused mutation past a name check (an alias
named like an allowed field, a fragment on ``Mutation``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow.request import Fixture
from gitvow.vocabulary import OPERATIONS

URL = "https://api.linear.app/graphql"
_JSON = {"content-type": "application/json"}


def gql(query: str, variables: Mapping[str, Any] | None = None, operation_name: str | None = None) -> bytes:
    """A GraphQL-over-HTTP request body."""
    payload: dict[str, Any] = {"query": query, "variables": dict(variables or {})}
    if operation_name is not None:
        payload["operationName"] = operation_name
    return json.dumps(payload).encode()


def _post(query: str, operations: tuple[str, ...], *, variables: Mapping[str, Any] | None = None,
          operation_name: str | None = None, near_miss: bool = False, note: str = "") -> Fixture:
    return Fixture("POST", URL, operations, body=gql(query, variables, operation_name), headers=_JSON,
                   near_miss=near_miss, note=note)


_ISSUE_PAYLOAD = """
fragment IssuePayload on IssuePayload {
  __typename
  lastSyncId
  issue { id identifier }
  success
}"""

FIXTURES: tuple[Fixture, ...] = (
    _post(
        "query viewer { viewer { ...User } }\nfragment User on User { __typename id name email }",
        ("read",),
        note="the SDK's viewer query, with its fragment",
    ),
    _post("query { me: viewer { id } teams(first: 5) { nodes { id key } } }", ("read",), note="aliases in a query"),
    _post(
        "mutation createIssue($input: IssueCreateInput!) { issueCreate(input: $input) { ...IssuePayload } }" + _ISSUE_PAYLOAD,
        ("issue.create",),
        variables={"input": {"teamId": "team-1", "title": "Crash on start"}},
    ),
    _post(
        "mutation createIssue($input: IssueCreateInput!) { issueCreate(input: $input) { ...IssuePayload } }" + _ISSUE_PAYLOAD,
        ("issue.create", "issue.relate"),
        variables={"input": {"teamId": "team-1", "title": "Child", "parentId": "issue-1"}},
        note="a sub-issue links to its parent",
    ),
    _post(
        'mutation { issueCreate(input: {teamId: "team-1", title: "Child", parentId: "issue-1"}) { success } }',
        ("issue.create", "issue.relate"),
        note="parentId written inline",
    ),
    _post(
        "mutation updateIssue($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { ...IssuePayload } }"
        + _ISSUE_PAYLOAD,
        ("issue.edit",),
        variables={"id": "issue-1", "input": {"stateId": "done"}},
    ),
    _post(
        "mutation createComment($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id } } }",
        ("issue.comment",),
        variables={"input": {"issueId": "issue-1", "body": "Looks good"}},
    ),
    _post(
        "mutation issueAddLabel($id: String!, $labelId: String!) { issueAddLabel(id: $id, labelId: $labelId) { success } }",
        ("label.add",),
        variables={"id": "issue-1", "labelId": "label-1"},
    ),
    _post(
        "mutation issueRemoveLabel($id: String!, $labelId: String!) { issueRemoveLabel(id: $id, labelId: $labelId) { success } }",
        ("label.add",),
        variables={"id": "issue-1", "labelId": "label-1"},
    ),
    _post(
        "mutation createIssueRelation($input: IssueRelationCreateInput!) { issueRelationCreate(input: $input) { success } }",
        ("issue.relate",),
        variables={"input": {"issueId": "issue-1", "relatedIssueId": "issue-2", "type": "blocks"}},
    ),
    _post("mutation { projectCreate(input: {name: \"RFC\", teamIds: [\"team-1\"]}) { success } }", ("issue.relate",)),
    _post("mutation { projectUpdate(id: \"p-1\", input: {name: \"RFC v2\"}) { success } }", ("issue.relate",)),
    _post(
        "mutation attachmentLinkURL($issueId: String!, $url: String!) { attachmentLinkURL(issueId: $issueId, url: $url) { success } }",
        ("attachment.link",),
        variables={"issueId": "issue-1", "url": "https://example.test/pr/1"},
    ),
    _post("mutation { attachmentCreate(input: {issueId: \"i\", title: \"t\", url: \"https://example.test\"}) { success } }",
          ("attachment.link",)),
    _post("mutation { agentActivityCreate(input: {agentSessionId: \"s\", content: {}}) { success } }", ("agent.session",)),
    _post("mutation { agentSessionUpdate(id: \"s\", input: {}) { success } }", ("agent.session",)),
    _post(
        "mutation { first: commentCreate(input: {issueId: \"a\", body: \"x\"}) { success } "
        "second: commentCreate(input: {issueId: \"b\", body: \"y\"}) { success } }",
        ("issue.comment",),
        note="two aliased comments are one operation",
    ),
    _post(
        "mutation { ...Both } fragment Both on Mutation { issueUpdate(id: \"i\", input: {}) { success } "
        "commentCreate(input: {issueId: \"i\", body: \"x\"}) { success } }",
        ("issue.edit", "issue.comment"),
        note="top-level fields reached through a fragment spread",
    ),
    _post(
        "query one { viewer { id } } mutation two { issueDelete(id: \"i\") { success } }",
        ("read",),
        operation_name="one",
        note="operationName selects the query; the mutation is not run",
    ),
    # Near misses: look like an allowed mutation, are not one.
    _post("mutation { issueDelete(id: \"i\") { success } }", ("unknown",), near_miss=True, note="delete is not edit"),
    _post("mutation { issueCreate: issueDelete(id: \"i\") { success } }", ("unknown",), near_miss=True,
          note="an alias named like an allowed field"),
    _post("mutation { ...M } fragment M on Mutation { issueArchive(id: \"i\") { success } }", ("unknown",),
          near_miss=True, note="a refused field inside a fragment"),
    _post("mutation { issueRelationDelete(id: \"r\") { success } }", ("unknown",), near_miss=True,
          note="unlinking stays denied"),
    _post("mutation { issueLabelCreate(input: {name: \"bug\"}) { success } }", ("unknown",), near_miss=True,
          note="creating a workspace label is not label.add"),
    _post("mutation { agentSessionCreateOnIssue(input: {issueId: \"i\"}) { success } }", ("unknown",), near_miss=True,
          note="only activity and session updates are agent.session"),
    _post(
        "mutation { commentCreate(input: {issueId: \"i\", body: \"x\"}) { success } issueDelete(id: \"i\") { success } }",
        ("issue.comment", "unknown"),
        near_miss=True,
        note="one refused field refuses the whole document",
    ),
    _post(
        "query one { viewer { id } } mutation two { issueDelete(id: \"i\") { success } }",
        ("unknown",),
        operation_name="two",
        near_miss=True,
        note="operationName selects the mutation",
    ),
    Fixture("GET", f"{URL}?query=%7Bviewer%7Bid%7D%7D", ("unknown",), near_miss=True,
            note="GraphQL over GET is not accepted"),
)


def fail_closed(body_limit: int, field_limit: int) -> tuple[Fixture, ...]:
    """Requests refused at every mode; built from the limits in force."""
    filler = "x" * body_limit
    many = " ".join(f"f{i}: viewer {{ id }}" for i in range(field_limit + 1))
    return (
        Fixture("POST", URL, ("unknown",), body=b"{not json", headers=_JSON, note="unparseable JSON"),
        Fixture("POST", URL, ("unknown",), body=gql("mutation { issueCreate("), headers=_JSON, note="unparseable GraphQL"),
        Fixture("POST", URL, ("unknown",), body=gql("query { viewer { id } }", {"pad": filler}), headers=_JSON,
                note="over the body limit"),
        Fixture("POST", URL, ("unknown",), body=gql(f"query {{ {many} }}"), headers=_JSON, note="over the field limit"),
        Fixture("POST", URL, ("unknown",), body=b'[{"query": "{ viewer { id } }"}]', headers=_JSON, note="a batch"),
        Fixture("POST", URL, ("unknown",), body=b'{"extensions": {"persistedQuery": {"sha256Hash": "ab"}}}',
                headers=_JSON, note="a persisted query has no text to read"),
        Fixture("POST", URL, ("unknown",), body=gql("subscription { issues { id } }"), headers=_JSON,
                note="subscriptions are refused"),
        Fixture("POST", URL, ("unknown",), body=gql("mutation { ...M } fragment M on Mutation { ...M }"),
                headers=_JSON, note="a fragment that spreads itself"),
        Fixture("POST", "https://api.linear.app/rest/issues", ("unknown",), body=b"{}", note="unmatched path"),
        Fixture("DELETE", URL, ("unknown",), note="unmatched method"),
        Fixture("POST", f"{URL}?operationName=x", ("unknown",), body=gql("query { viewer { id } }"), headers=_JSON,
                note="a query string on the endpoint"),
    )


_NO_GIT = "Linear is an issue tracker: it hosts no git repositories"
_NO_PRS = "Linear has no pull requests; it links to the forge's (attachment.link)"
_REASONS: dict[str, str] = {
    "auth.login": "sign-in happens in the browser (OAuth) or with an API key, not through the API host",
    "git.fetch": _NO_GIT,
    "git.push": _NO_GIT,
    "ref.write": _NO_GIT,
    "branch.protect": _NO_GIT,
    "pr.create": _NO_PRS,
    "pr.edit": _NO_PRS,
    "pr.review": _NO_PRS,
    "pr.update_branch": _NO_PRS,
    "pr.merge": _NO_PRS,
    "inference.call": "Linear's API is not a model endpoint",
    "repo.create": _NO_GIT,
    "repo.delete": _NO_GIT,
    "repo.fork": _NO_GIT,
    "repo.admin": "workspace administration mutations are unknown (denied), not a repository's settings",
    "contents.write": _NO_GIT,
    "release.write": "Linear releases are tracker records; their mutations are unknown (denied)",
    "gist.write": "Linear has no gists or snippets",
    "workflow.dispatch": "Linear runs no CI workflows",
    "secret.write": "Linear has no repository secrets; webhook and integration mutations are unknown (denied)",
    "label.manage": "creating or editing workspace labels is unknown (denied); only labelling an issue is mapped",
}
_SUPPORTED = {"read", "issue.create", "issue.edit", "issue.comment", "label.add", "issue.relate", "agent.session",
              "attachment.link", "unknown"}

UNSUPPORTED: Mapping[str, str] = {
    name: _REASONS.get(name, "not expressible on Linear")
    for name in OPERATIONS
    if name not in _SUPPORTED
}
