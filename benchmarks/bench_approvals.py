"""The approval path's store operations on the default SQLite store: what staging a refused
request, answering the agent's identical retry, and the sender's claim cost.

Run: ``pytest benchmarks/bench_approvals.py --benchmark-only`` (figures in docs/benchmarks.md).
CI runs it with ``--benchmark-disable`` so it stays correct; timings are never asserted.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

store_module = pytest.importorskip("gitvow_proxy.store")
approvals = pytest.importorskip("gitvow_proxy.approvals")

URL = "https://ghes.example.test:443/api/v3/repos/team/app/pulls"
BODY = json.dumps({"title": "Add the thing", "body": "Why: " + "x" * 500, "head": "feature", "base": "main"}).encode()


def _approval(body: bytes, now: float) -> object:
    return approvals.Approval(
        id=approvals.new_id(), fingerprint=approvals.fingerprint("bench", "POST", URL, body), agent="bench",
        operations=("pr.create",), repo="team/app", adapter="github", method="POST", url=URL,
        headers=(("content-type", "application/json"),), body=body, created=now, expires=now + 86400,
    )


@pytest.fixture
def store(tmp_path: Path) -> object:
    s = store_module.SQLiteStore(tmp_path / "state.sqlite")
    yield s
    s.close()


def test_stage_a_new_request(benchmark: object, store: object) -> None:
    counter = itertools.count()

    def stage() -> None:
        body = BODY + str(next(counter)).encode()
        store.stage(_approval(body, 1000.0), 1000.0)  # type: ignore[attr-defined]

    benchmark(stage)  # type: ignore[operator]


def test_the_same_request_again_while_pending(benchmark: object, store: object) -> None:
    first = store.stage(_approval(BODY, 1000.0), 1000.0)  # type: ignore[attr-defined]
    result = benchmark(lambda: store.stage(_approval(BODY, 1001.0), 1001.0))  # type: ignore[operator, attr-defined]
    assert result.id == first.id


def test_claim_when_nothing_is_approved(benchmark: object, store: object) -> None:
    for i in range(50):
        store.stage(_approval(BODY + bytes([i]), 1000.0), 1000.0)  # type: ignore[attr-defined]
    assert benchmark(lambda: store.claim(1001.0)) is None  # type: ignore[operator, attr-defined]
