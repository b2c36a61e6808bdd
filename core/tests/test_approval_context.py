"""The forge-neutral values of an approval's context: the bounds kept, the JSON form, and the
recorded answers adapters and the kit replay."""

from __future__ import annotations

import json

import pytest

from gitvow.approval_context import (
    DIFF_LIMIT,
    FILE_LIMIT,
    ApprovalContext,
    Changes,
    ContextError,
    FileChange,
    PullRequest,
    answer_json,
    kind_of,
    optional_json,
    patch_counts,
    recorded,
)


def test_a_context_is_kept_within_its_bounds_and_says_so() -> None:
    files = tuple(FileChange(f"f{n}.py", 1, 0, "added") for n in range(FILE_LIMIT + 5))
    big = ApprovalContext("merge", changes=Changes(files, "é" * DIFF_LIMIT))
    kept = big.bounded()
    assert kept.changes is not None and kept.changes.truncated
    assert len(kept.changes.diff.encode()) <= DIFF_LIMIT and len(kept.changes.files) == FILE_LIMIT
    small = ApprovalContext("merge", changes=Changes(files[:2], "+x"))
    assert small.bounded() == small


def test_the_json_form_reads_back_the_same_with_its_totals() -> None:
    found = ApprovalContext("merge", repo="team/app", head_sha="a" * 40, number=7, notes=("checks: 404",),
                            pull=PullRequest(number=7, title="T", merged=False),
                            changes=Changes((FileChange("a.py", 2, 1, "modified"), FileChange("b.bin")), "+x", False, 3))
    data = json.loads(json.dumps(found.as_json()))
    assert (data["changes"]["additions"], data["changes"]["deletions"]) == (2, 1)
    assert ApprovalContext.from_json(data) == found


def test_recorded_answers_and_the_readers_over_them() -> None:
    asked: list[str] = []
    ask = recorded({"GET /a": {"x": 1}, "GET /text": "plain", "GET /gone": (410, {"message": "gone"}),
                    "GET /bad": "not json"}, asked)
    assert answer_json(ask, "/a") == {"x": 1} and ask("GET", "/text") == (200, b"plain")
    with pytest.raises(ContextError, match=r"^GET /gone answered 410$"):
        answer_json(ask, "/gone")
    with pytest.raises(ContextError, match=r"^GET /bad did not answer JSON$"):
        answer_json(ask, "/bad")
    notes: list[str] = []
    assert optional_json(ask, "/missing?per_page=100", notes) is None and notes == ["GET /missing answered 404"]
    assert asked == ["GET /a", "GET /text", "GET /gone", "GET /bad", "GET /missing?per_page=100"]


def test_kinds_and_counts() -> None:
    assert (kind_of(("issue.comment", "pr.merge")), kind_of(("pr.create",)), kind_of(("read",))) == ("merge", "create", None)
    assert patch_counts("--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-old\n+new\n+more\n") == (2, 1)
