"""What the human approving a staged GitLab merge or creation is shown, read from GitLab's
recorded answers; and the head a merge is pinned to (``sha`` on the REST merge only)."""

from __future__ import annotations

import json

from gitvow.approval_context import ApprovalContext, recorded
from gitvow_gitlab.adapter import GitLabAdapter
from gitvow_gitlab.approval_fixtures import APPROVAL_FIXTURES, SHA

ADAPTER = GitLabAdapter()


def read(index: int) -> ApprovalContext:
    fixture = APPROVAL_FIXTURES[index]
    request = fixture.staged.request()
    subject = ADAPTER.approval_subject(request, fixture.staged.operations)
    assert subject is not None
    return ADAPTER.approval_context(request, subject, recorded(fixture.answers))


def test_a_merge_by_quick_action_note_shows_the_merge_request() -> None:
    found = read(1)
    assert found.error is None and found.repo == "group/sub/proj" and found.number == 7
    assert found.pull is not None and found.pull.checks == "pipeline success" and found.pull.reviews == "approved by bob"
    assert found.changes is not None and (found.changes.additions, found.changes.deletions) == (2, 1)
    assert found.pull.merged is False  # "opened"; "merged" is what GitLab says of a merged one


def test_a_graphql_merge_and_a_creation() -> None:
    assert read(2).head_sha == SHA
    created = read(3)
    assert created.kind == "create" and created.repo == "group/sub/proj" and created.changes is not None


def test_only_the_rest_merge_carries_a_pin() -> None:
    merge, note, graphql = (f.staged.request() for f in APPROVAL_FIXTURES[:3])
    assert json.loads(ADAPTER.pin_head(merge, SHA) or b"") == {"squash": True, "sha": SHA}
    assert ADAPTER.pin_head(note, SHA) is None and ADAPTER.pin_head(graphql, SHA) is None
