"""Staged merges and creations with Gitea's recorded answers, for the contract kit's check of
the approval context and the pin (:class:`gitvow.approval_context.ApprovalFixture`)."""

from __future__ import annotations

from gitvow.approval_context import ApprovalFixture
from gitvow.request import Fixture
from gitvow_gitea.fixtures import R

SHA = "a" * 40
REPO = "team/app"
_ROOT = "/api/v1/repos/team/app"
_JSON = {"content-type": "application/json"}

APPROVAL_FIXTURES: tuple[ApprovalFixture, ...] = (
    ApprovalFixture(
        Fixture("POST", f"{R}/pulls/4/merge", ("pr.merge",), body=b'{"Do": "merge"}', headers=_JSON, repo=REPO),
        {f"GET {_ROOT}/pulls/4": {"number": 4, "title": "Gitea change", "user": {"login": "coder"},
                                  "head": {"ref": "x", "sha": SHA}, "base": {"ref": "main"}, "mergeable": True,
                                  "state": "closed", "merged": True, "html_url": "https://codeberg.org/team/app/pulls/4"},
         f"GET {_ROOT}/commits/{SHA}/status": {"state": "success", "statuses": [{"context": "ci", "status": "success"}]},
         f"GET {_ROOT}/pulls/4/reviews": [{"state": "APPROVED", "user": {"login": "dora"}}],
         f"GET {_ROOT}/pulls/4/files?limit=100": [{"filename": "b.go", "additions": 3, "deletions": 0, "status": "added"}],
         f"GET {_ROOT}/pulls/4.diff": "diff --git a/b.go b/b.go\n+package b\n"},
        head_sha=SHA, repo=REPO, number=4),
    ApprovalFixture(
        Fixture("POST", f"{R}/pulls", ("pr.create",), body=b'{"base": "main", "head": "feature", "title": "Fix"}',
                headers=_JSON, repo=REPO),
        {f"GET {_ROOT}/compare/main...feature": {"total_commits": 1, "commits": [{"sha": SHA}],
                                                 "files": [{"filename": "b.go", "additions": 3, "deletions": 0,
                                                            "status": "added"}]}},
        head_sha=SHA, repo=REPO),
)
