"""What the human approving a staged Gitea merge or creation is shown, read from Gitea's recorded
answers; and the head a merge is pinned to (``head_commit_id``)."""

from __future__ import annotations

import json

from gitvow.approval_context import recorded
from gitvow.request import Request
from gitvow_gitea.adapter import GiteaAdapter
from gitvow_gitea.approval_fixtures import APPROVAL_FIXTURES, SHA

ADAPTER = GiteaAdapter()


def test_a_merge_shows_the_pull_request_and_its_diff() -> None:
    fixture = APPROVAL_FIXTURES[0]
    request = fixture.staged.request()
    subject = ADAPTER.approval_subject(request, fixture.staged.operations)
    assert subject is not None
    found = ADAPTER.approval_context(request, subject, recorded(fixture.answers))
    assert found.error is None and found.head_sha == SHA
    assert found.pull is not None and found.pull.reviews == "approved by dora" and "ci success" in found.pull.checks
    assert found.changes is not None and "+package b" in found.changes.diff and found.pull.merged is True


def test_the_merge_is_pinned_by_head_commit_id_and_a_cancel_is_not() -> None:
    merge = APPROVAL_FIXTURES[0].staged.request()
    assert json.loads(ADAPTER.pin_head(merge, SHA) or b"") == {"Do": "merge", "head_commit_id": SHA}
    cancel = Request.from_url("DELETE", "https://codeberg.org/api/v1/repos/team/app/pulls/4/merge")
    assert ADAPTER.pin_head(cancel, SHA) is None
