"""What the human approving a staged GitHub merge or creation is shown, read from GitHub's
recorded answers; and the head a merge is pinned to (REST ``sha``, GraphQL ``expectedHeadOid``)."""

from __future__ import annotations

import json

from gitvow.approval_context import ApprovalContext, recorded
from gitvow.request import Request
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.approval_fixtures import APPROVAL_FIXTURES, SHA

ADAPTER = GitHubAdapter()


def read(index: int) -> tuple[ApprovalContext, list[str]]:
    fixture = APPROVAL_FIXTURES[index]
    request = fixture.staged.request()
    subject = ADAPTER.approval_subject(request, fixture.staged.operations)
    assert subject is not None
    asked: list[str] = []
    return ADAPTER.approval_context(request, subject, recorded(fixture.answers, asked)), asked


def test_a_rest_merge_shows_the_pull_request_its_checks_reviews_and_diff() -> None:
    found, _ = read(0)
    pull = found.pull
    assert pull is not None and found.error is None
    assert (found.repo, pull.number, pull.title, pull.author, pull.head, pull.base) == (
        "octo/app", 7, "Make it faster", "coder-bot", "speed", "main")
    assert found.head_sha == SHA and pull.mergeable == "yes (clean)"
    assert pull.checks == "2 checks: 1 failure, 1 success; failing: lint; statuses success: ci/x success"
    assert pull.reviews == "approved by alice"
    assert found.changes is not None and found.changes.files[0].path == "src/fast.py"
    assert "+new" in found.changes.diff and (found.changes.additions, found.changes.deletions) == (2, 1)


def test_a_graphql_merge_resolves_its_node_id_on_ghes() -> None:
    found, asked = read(1)
    assert asked[0] == "POST /api/graphql" and found.repo == "octo/app" and found.number == 7
    assert found.pull is not None and found.pull.title == "Make it faster"


def test_a_creation_shows_the_comparison() -> None:
    found, _ = read(2)
    assert found.kind == "create" and found.head_sha == SHA and (found.head, found.base) == ("feature", "main")
    assert found.changes is not None and "+hello" in found.changes.diff and found.changes.commits == 1


def test_the_pin_is_the_field_github_checks() -> None:
    rest = Request.from_url("PUT", "https://api.github.com/repos/o/r/pulls/7/merge", body=b"")
    assert json.loads(ADAPTER.pin_head(rest, SHA) or b"") == {"sha": SHA}
    kept = Request.from_url("PUT", "https://api.github.com/repos/o/r/pulls/7/merge", body=b'{"sha":"' + b"b" * 40 + b'"}')
    assert ADAPTER.pin_head(kept, SHA) == kept.body
    literal = json.dumps({"query": 'mutation { mergePullRequest(input: {pullRequestId: "PR_7"}) { clientMutationId } }'})
    pinned = json.loads(ADAPTER.pin_head(Request.from_url("POST", "https://h/api/graphql", body=literal.encode()), SHA)
                        or b"")
    assert f'expectedHeadOid: "{SHA}"' in pinned["query"] and 'pullRequestId: "PR_7"' in pinned["query"]
    variable = json.dumps({"query": "mutation($i: MergePullRequestInput!) { mergePullRequest(input: $i) { clientMutationId } }",
                           "variables": {"i": {"pullRequestId": "PR_7"}}})
    pinned = json.loads(ADAPTER.pin_head(Request.from_url("POST", "https://h/api/graphql", body=variable.encode()), SHA)
                        or b"")
    assert pinned["variables"]["i"] == {"pullRequestId": "PR_7", "expectedHeadOid": SHA}
    create = Request.from_url("POST", "https://api.github.com/repos/o/r/pulls", body=b'{"head":"x","base":"main"}')
    assert ADAPTER.pin_head(create, SHA) is None


def test_two_merges_in_one_document_have_no_subject_and_no_pin() -> None:
    query = ('mutation { a: mergePullRequest(input: {pullRequestId: "PR_1"}) { clientMutationId } '
             'b: mergePullRequest(input: {pullRequestId: "PR_2"}) { clientMutationId } }')
    two = Request.from_url("POST", "https://api.github.com/graphql", body=json.dumps({"query": query}).encode())
    assert ADAPTER.approval_subject(two, ("pr.merge",)) is None
    assert ADAPTER.pin_head(two, SHA) is None
