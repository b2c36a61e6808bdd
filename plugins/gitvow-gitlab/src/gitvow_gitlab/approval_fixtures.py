"""Staged merges and creations with GitLab's recorded answers, for the contract kit's check of
the approval context and the pin (:class:`gitvow.approval_context.ApprovalFixture`)."""

from __future__ import annotations

import json

from gitvow.approval_context import ApprovalFixture
from gitvow.request import Fixture
from gitvow_gitlab.fixtures import GRAPHQL, REPO, P

SHA = "a" * 40
PATCH = "@@ -1,2 +1,3 @@\n line\n-old\n+new\n+more"
_JSON = {"content-type": "application/json"}
_MR = "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7"
_ANSWERS: dict[str, object] = {
    f"GET {_MR}": {"iid": 7, "title": "Tidy", "author": {"username": "coder"}, "source_branch": "tidy",
                   "target_branch": "main", "sha": SHA, "state": "opened", "detailed_merge_status": "mergeable",
                   "references": {"full": f"{REPO}!7"}, "head_pipeline": {"status": "success"},
                   "web_url": f"https://gitlab.com/{REPO}/-/merge_requests/7"},
    f"GET {_MR}/approvals": {"approved_by": [{"user": {"username": "bob"}}]},
    f"GET {_MR}/diffs?per_page=100": [{"old_path": "a.txt", "new_path": "a.txt", "diff": PATCH}],
}

APPROVAL_FIXTURES: tuple[ApprovalFixture, ...] = (
    ApprovalFixture(Fixture("PUT", f"{P}/merge_requests/7/merge", ("pr.merge",), body=b'{"squash": true}',
                            headers=_JSON, repo=REPO), _ANSWERS, head_sha=SHA, repo=REPO, number=7),
    ApprovalFixture(Fixture("POST", f"{P}/merge_requests/7/notes", ("issue.comment", "pr.merge"),
                            body=b'{"body": "/merge"}', headers=_JSON, repo=REPO), _ANSWERS,
                    head_sha=SHA, repo=REPO, number=7),
    ApprovalFixture(Fixture("POST", GRAPHQL, ("pr.merge",), headers=_JSON, body=json.dumps({
                        "query": 'mutation { mergeRequestAccept(input: {projectPath: "group/sub/proj", iid: "7"}) '
                                 "{ errors } }"}).encode()), _ANSWERS, head_sha=SHA, repo=REPO, number=7),
    ApprovalFixture(Fixture("POST", f"{P}/merge_requests", ("pr.create",), headers=_JSON, repo=REPO,
                            body=b'{"source_branch": "tidy", "target_branch": "main", "title": "T"}'),
                    {"GET /api/v4/projects/group%2Fsub%2Fproj": {"path_with_namespace": REPO},
                     "GET /api/v4/projects/group%2Fsub%2Fproj/repository/compare?from=main&to=tidy&straight=false": {
                         "commit": {"id": SHA}, "commits": [{"id": SHA}],
                         "diffs": [{"old_path": "a", "new_path": "a", "diff": PATCH}]}},
                    head_sha=SHA, repo=REPO),
)

