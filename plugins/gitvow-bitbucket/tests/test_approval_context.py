"""What the human approving a staged Bitbucket merge is shown, read from Bitbucket Cloud's recorded
answers; what is not read yet is said so; and a merge carries no pin."""

from __future__ import annotations

import pytest

from gitvow.approval_context import ContextError, recorded
from gitvow.request import Request
from gitvow_bitbucket.adapter import BitbucketAdapter
from gitvow_bitbucket.approval_fixtures import APPROVAL_FIXTURES, HEAD
from gitvow_bitbucket.fixtures import DPR, R

ADAPTER = BitbucketAdapter()


def test_a_cloud_merge_shows_the_pull_request_its_statuses_approvals_and_files() -> None:
    fixture = APPROVAL_FIXTURES[0]
    request = fixture.staged.request()
    subject = ADAPTER.approval_subject(request, ("pr.merge",))
    assert subject is not None
    found = ADAPTER.approval_context(request, subject, recorded(fixture.answers))
    pull = found.pull
    assert pull is not None and found.error is None
    assert (found.repo, pull.number, pull.title, pull.author, pull.head, pull.base, found.head_sha) == (
        "team/app", 7, "Tidy the queue", "Coder Bot", "tidy", "main", HEAD)
    assert (pull.state, pull.checks, pull.reviews, pull.merged) == ("open", "statuses: build successful",
                                                                    "approved by Alice", False)
    assert found.changes is not None and [(f.path, f.additions, f.deletions, f.status) for f in found.changes.files] == [
        ("queue.py", 4, 2, "modified"), ("old.py", 0, 9, "removed")]
    assert found.notes == ("Bitbucket's diff is not fetched: the files are listed",)
    assert ADAPTER.pin_head(request, HEAD) is None


@pytest.mark.parametrize(("method", "url", "operations"), [
    ("POST", f"{R}/pullrequests", ("pr.create",)),
    ("POST", f"{DPR}/merge?version=1", ("pr.merge",)),
])
def test_what_is_not_read_yet_is_said_so(method: str, url: str, operations: tuple[str, ...]) -> None:
    request = Request.from_url(method, url, body=b"{}")
    subject = ADAPTER.approval_subject(request, operations)
    assert subject is not None
    with pytest.raises(ContextError, match="gitvow-bitbucket does not read this yet"):
        ADAPTER.approval_context(request, subject, recorded({}))
