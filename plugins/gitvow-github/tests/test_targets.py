"""What a GitHub request targets: every repository named in any GraphQL argument, node ids
to resolve, the issues route that is a pull request's too, and ``resolve`` against a
recording forge that answers ``nodes(ids:)`` and issue reads."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from gitvow.request import Classification, Request, Resolution, Target
from gitvow.targets import Fetch
from gitvow.testing import RecordingServer, Seen
from gitvow_github.adapter import GitHubAdapter


def graphql(query: str, variables: dict[str, object] | None = None, host: str = "api.github.com") -> Classification:
    path = "/graphql" if host == "api.github.com" else "/api/graphql"
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    return GitHubAdapter().classify(Request.from_url("POST", f"https://{host}{path}", body=body))


@pytest.mark.parametrize(
    ("query", "variables", "repos"),
    [
        ('mutation { createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "team/paused", branchName: "main"},'
         ' expectedHeadOid: "0", message: {headline: "x"}}) { clientMutationId } }', {}, ("team/paused",)),
        ("mutation($b: CommittableBranch!) { createCommitOnBranch(input: {branch: $b, expectedHeadOid: \"0\","
         " message: {headline: \"x\"}}) { clientMutationId } }",
         {"b": {"repositoryNameWithOwner": "team/paused", "branchName": "main"}}, ("team/paused",)),
        ('mutation { a: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "team/one"}}) { clientMutationId }'
         ' b: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "team/two"}}) { clientMutationId } }', {},
         ("team/one", "team/two")),
        ('query { repository(owner: "team", name: "app") { id } other: repository(owner: "x", name: "y") { id } }', {},
         ("team/app", "x/y")),
    ],
    ids=["literal", "variable", "aliases", "query"],
)
def test_every_repository_named_is_read(query: str, variables: dict[str, object], repos: tuple[str, ...]) -> None:
    c = graphql(query, variables)
    assert c.repos == repos


def test_node_ids_are_targets_at_the_hosts_graphql_endpoint() -> None:
    c = graphql('mutation { createIssue(input: {repositoryId: "R_1", title: "t", assigneeIds: ["U_1"],'
                ' clientMutationId: "x"}) { clientMutationId } }', host="ghes.example")
    assert c.operations == ("issue.create",) and c.repos == () and not c.repo_established
    assert c.targets == (Target("node", "R_1", at="/api/graphql"), Target("node", "U_1", at="/api/graphql"))
    merge = graphql('mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id}) { clientMutationId } }',
                    {"id": "PR_9"})
    assert merge.targets == (Target("node", "PR_9", at="/graphql"),)


@pytest.mark.parametrize(
    ("method", "url", "at"),
    [
        ("PATCH", "https://api.github.com/repos/team/app/issues/7", "/repos/team/app/issues/7"),
        ("PUT", "https://api.github.com/repos/team/app/issues/7/lock", "/repos/team/app/issues/7"),
        ("POST", "https://ghes.example/api/v3/repos/team/app/issues/7/assignees", "/api/v3/repos/team/app/issues/7"),
        ("DELETE", "https://api.github.com/repos/team/app/issues/7/labels/bug", "/repos/team/app/issues/7"),
    ],
    ids=["edit", "lock", "assignees-ghes", "remove-label"],
)
def test_the_issues_api_may_act_on_a_pull_request(method: str, url: str, at: str) -> None:
    c = GitHubAdapter().classify(Request.from_url(method, url, body=b"{}"))
    assert c.operations == ("issue.edit",) and c.repos == ("team/app",)
    assert c.targets == (Target("issue", at, by_type=(("PullRequest", ("pr.edit",)),), at=at),)


def test_issue_routes_that_mean_the_same_on_a_pull_request_carry_no_target() -> None:
    for method, path in (("POST", "/repos/team/app/issues/7/comments"), ("POST", "/repos/team/app/issues/7/labels")):
        c = GitHubAdapter().classify(Request.from_url(method, f"https://api.github.com{path}", body=b"{}"))
        assert c.operations in (("issue.comment",), ("label.add",)) and c.targets == ()


def _forge(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    if seen.route == "/graphql":
        ids = json.loads(seen.body)["variables"]["ids"]
        known = {"R_1": {"__typename": "Repository", "nameWithOwner": "team/app"},
                 "PR_9": {"__typename": "PullRequest", "repository": {"nameWithOwner": "team/open"}},
                 "U_1": {"__typename": "User"},
                 "DC_1": {"__typename": "DiscussionComment", "discussion": {"repository": {"nameWithOwner": "team/d"}}},
                 "X_1": {"__typename": "SomethingNew"},
                 "L_1": {"__typename": "Label", "repository": None}}
        return 200, {}, json.dumps({"data": {"nodes": [known.get(i) for i in ids]}}).encode()
    if seen.route == "/repos/team/app/issues/7":
        return 200, {}, json.dumps({"number": 7, "pull_request": {"url": "x"}}).encode()
    if seen.route == "/repos/team/app/issues/8":
        return 200, {}, json.dumps({"number": 8}).encode()
    return 404, {}, b"{}"


def _fetch(server: RecordingServer) -> Fetch:
    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(server.url + path, data=body or None, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    return fetch


def test_resolve_asks_once_for_many_nodes_and_reads_issue_types() -> None:
    node = [Target("node", i, at="/graphql") for i in ("R_1", "PR_9", "U_1", "GONE", "DC_1", "X_1", "L_1")]
    issues = [Target("issue", p, at=p) for p in ("/repos/team/app/issues/7", "/repos/team/app/issues/8",
                                                  "/repos/team/app/issues/9")]
    with RecordingServer(_forge) as server:
        answers = GitHubAdapter().resolve([*node, *issues], _fetch(server))
        asked = [s.route for s in server.seen]
    assert asked.count("/graphql") == 1
    assert answers == {
        node[0]: Resolution("team/app", "Repository"),
        node[1]: Resolution("team/open", "PullRequest"),
        node[2]: Resolution(None, "User"),
        node[4]: Resolution("team/d", "DiscussionComment"),
        issues[0]: Resolution("team/app", "PullRequest"),
        issues[1]: Resolution("team/app", "Issue"),
    }
