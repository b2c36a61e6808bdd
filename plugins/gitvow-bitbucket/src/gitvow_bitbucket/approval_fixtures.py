"""A staged Bitbucket Cloud merge with the forge's recorded answers, for the contract kit's check
of the approval context (:class:`gitvow.approval_context.ApprovalFixture`)."""

from __future__ import annotations

from gitvow.approval_context import ApprovalFixture
from gitvow.request import Fixture
from gitvow_bitbucket.fixtures import PR

#: Bitbucket names a pull request's head commit by a 12-character hash.
HEAD = "9f3c2a1b7d4e"
_ROOT = "/2.0/repositories/team/app/pullrequests/7"

APPROVAL_FIXTURES: tuple[ApprovalFixture, ...] = (
    ApprovalFixture(
        Fixture("POST", f"{PR}/merge", ("pr.merge",), body=b'{"merge_strategy": "squash"}',
                headers={"content-type": "application/json"}, repo="team/app"),
        {f"GET {_ROOT}": {"id": 7, "title": "Tidy the queue", "state": "OPEN",
                          "author": {"display_name": "Coder Bot"},
                          "source": {"branch": {"name": "tidy"}, "commit": {"hash": HEAD}},
                          "destination": {"branch": {"name": "main"}, "commit": {"hash": "0a1b2c3d4e5f"}},
                          "participants": [{"user": {"display_name": "Alice"}, "role": "REVIEWER", "approved": True},
                                           {"user": {"display_name": "Bob"}, "role": "PARTICIPANT", "approved": False}],
                          "links": {"html": {"href": "https://bitbucket.org/team/app/pull-requests/7"}}},
         f"GET {_ROOT}/statuses": {"values": [{"key": "ci", "name": "build", "state": "SUCCESSFUL"}]},
         f"GET {_ROOT}/diffstat": {"values": [
             {"status": "modified", "old": {"path": "queue.py"}, "new": {"path": "queue.py"}, "lines_added": 4,
              "lines_removed": 2},
             {"status": "removed", "old": {"path": "old.py"}, "new": None, "lines_added": 0, "lines_removed": 9}]}},
        head_sha=HEAD, repo="team/app", number=7),
)
