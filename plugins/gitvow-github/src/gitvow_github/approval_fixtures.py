"""Staged merges and creations with GitHub's recorded answers, for the contract kit's check of
the approval context and the pin (:class:`gitvow.approval_context.ApprovalFixture`)."""

from __future__ import annotations

import json

from gitvow.approval_context import ApprovalFixture
from gitvow.request import Fixture
from gitvow_github.fixtures import API, GHES, REPO, R, gql

SHA = "a" * 40
PATCH = "@@ -1,2 +1,3 @@\n line\n-old\n+new\n+more"


def _pull(root: str, number: int) -> dict[str, object]:
    """A pull request's answers: the pull, its head's checks and statuses, reviews and files."""
    return {
        f"GET {root}/pulls/{number}": {
            "number": number, "title": "Make it faster", "user": {"login": "coder-bot"}, "state": "open",
            "draft": False, "head": {"ref": "speed", "sha": SHA}, "base": {"ref": "main"}, "mergeable": True,
            "mergeable_state": "clean", "html_url": f"https://github.com/{REPO}/pull/{number}", "commits": 2},
        f"GET {root}/commits/{SHA}/check-runs?per_page=100": {"check_runs": [
            {"name": "tests", "status": "completed", "conclusion": "success"},
            {"name": "lint", "status": "completed", "conclusion": "failure"}]},
        f"GET {root}/commits/{SHA}/status": {"state": "success",
                                             "statuses": [{"context": "ci/x", "state": "success"}]},
        f"GET {root}/pulls/{number}/reviews?per_page=100": [{"user": {"login": "alice"}, "state": "APPROVED"}],
        f"GET {root}/pulls/{number}/files?per_page=100": [
            {"filename": "src/fast.py", "additions": 2, "deletions": 1, "status": "modified", "patch": PATCH}],
    }


_MERGE_BY_NODE = gql("mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id, mergeMethod: SQUASH}) "
                     "{ clientMutationId } }", {"id": "PR_kwDO7"})
_NODE_ANSWER = {"data": {"node": {"__typename": "PullRequest", "number": 7, "repository": {"nameWithOwner": "Octo/App"}}}}

APPROVAL_FIXTURES: tuple[ApprovalFixture, ...] = (
    ApprovalFixture(Fixture("PUT", f"{R}/pulls/7/merge", ("pr.merge",), body=b'{"merge_method":"squash"}', repo=REPO),
                    _pull(f"/repos/{REPO}", 7), head_sha=SHA, repo=REPO, number=7),
    ApprovalFixture(Fixture("POST", f"{GHES}/api/graphql", ("pr.merge",), body=_MERGE_BY_NODE),
                    {**_pull(f"/api/v3/repos/{REPO}", 7), "POST /api/graphql": _NODE_ANSWER},
                    head_sha=SHA, repo=REPO, number=7),
    ApprovalFixture(Fixture("POST", f"{API}/repos/{REPO}/pulls", ("pr.create",), repo=REPO,
                            body=json.dumps({"title": "Add it", "head": "feature", "base": "main"}).encode()),
                    {f"GET /repos/{REPO}/compare/main...feature": {
                        "total_commits": 1, "commits": [{"sha": SHA}],
                        "files": [{"filename": "README.md", "additions": 1, "deletions": 0, "status": "modified",
                                   "patch": "+hello"}]}},
                    head_sha=SHA, repo=REPO),
)
