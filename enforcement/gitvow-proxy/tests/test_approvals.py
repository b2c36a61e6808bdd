"""Approvals in the store (both implementations): one live approval per request, decisions only
on pending ones, expiry, and the atomic claim that makes the send exactly-once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from gitvow_proxy.approvals import (
    APPROVED,
    EXPIRED,
    FAILED,
    PENDING,
    REJECTED,
    SENDING,
    SENT,
    Approval,
    fingerprint,
    kept_headers,
    new_id,
)
from gitvow_proxy.store import ApprovalError, MemoryStore, SQLiteStore, Store

URL = "https://ghes.test:443/api/v3/repos/team/app/pulls"
BODY = json.dumps({"title": "Add it", "body": "Why", "head": "feature", "base": "main"}).encode()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "redis":
        from gitvow_proxy.store.redis_store import RedisStore

        return RedisStore(request.getfixturevalue("redis_server").url)
    return MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "state.sqlite")


def staged(now: float = 100.0, body: bytes = BODY, agent: str = "coder", ttl: float = 60.0) -> Approval:
    return Approval(
        id=new_id(), fingerprint=fingerprint(agent, "POST", URL, body), agent=agent, operations=("pr.create",),
        repo="team/app", adapter="github", method="POST", url=URL, headers=(("content-type", "application/json"),),
        body=body, created=now, expires=now + ttl,
    )


def test_the_same_request_while_pending_keeps_its_one_approval(store: Store) -> None:
    first = store.stage(staged(), 100.0)
    assert store.stage(staged(101.0), 101.0).id == first.id
    other = store.stage(staged(102.0, body=BODY + b" "), 102.0)
    assert other.id != first.id
    assert store.stage(staged(103.0, agent="other"), 103.0).id not in (first.id, other.id)
    assert [a.id for a in store.approvals([PENDING])][-1] == first.id  # newest first
    assert store.approval(first.id.lower()) == store.approval(first.id)


def test_decisions_only_on_pending_ones_and_only_once(store: Store) -> None:
    a = store.stage(staged(), 100.0)
    decided = store.decide(a.id, approve=False, by="alice", reason="not now", now=110.0)
    assert (decided.status, decided.decided_by, decided.reason) == (REJECTED, "alice", "not now")
    with pytest.raises(ApprovalError, match=f"approval {a.id} is rejected, not pending"):
        store.decide(a.id, approve=True, by="bob", reason=None, now=111.0)
    with pytest.raises(ApprovalError, match="no approval 'NOPE00'"):
        store.decide("NOPE00", approve=True, by="bob", reason=None, now=111.0)
    assert store.stage(staged(120.0), 120.0).status == REJECTED  # the agent's retry sees the rejection


def test_expiry_then_a_fresh_approval(store: Store) -> None:
    a = store.stage(staged(ttl=10), 100.0)
    with pytest.raises(ApprovalError, match="expired unanswered"):
        store.decide(a.id, approve=True, by="alice", reason=None, now=111.0)
    assert store.stage(staged(112.0), 112.0).status == EXPIRED  # the retry is told it expired
    fresh = store.stage(staged(113.0, ttl=1000), 113.0)
    assert fresh.id != a.id and fresh.status == PENDING
    b = store.stage(staged(200.0, body=b"{}", ttl=5), 200.0)
    assert [x.id for x in store.expire(206.0)] == [b.id] and store.expire(207.0) == []


def test_claim_is_exactly_once_and_finish_records_the_answer(store: Store) -> None:
    a = store.stage(staged(), 100.0)
    assert store.claim(101.0) is None  # pending is not claimable
    store.decide(a.id, approve=True, by="alice", reason=None, now=102.0)
    claimed = store.claim(103.0)
    assert claimed is not None and (claimed.id, claimed.status) == (a.id, SENDING)
    assert store.claim(104.0) is None
    done = store.finish(a.id, sent=True, status=201, content_type="application/json", body=b'{"number": 8}', now=105.0)
    assert (done.status, done.response_status, done.response_body) == (SENT, 201, b'{"number": 8}')
    assert store.stage(staged(106.0), 106.0).status == SENT  # the identical retry gets the answer
    with pytest.raises(ApprovalError):
        store.finish(a.id, sent=True, status=201, content_type=None, body=b"", now=107.0)


def test_a_failed_send_is_recorded_and_a_retry_stages_anew(store: Store) -> None:
    a = store.stage(staged(), 100.0)
    store.decide(a.id, approve=True, by="alice", reason=None, now=101.0)
    assert store.claim(102.0) is not None
    failed = store.finish(a.id, sent=False, status=403, content_type="text/plain", body=b"paused", now=103.0,
                          reason="gitvow refused pr.create on team/app: team/app is paused. reason=repo_paused")
    assert failed.status == FAILED and "repo_paused" in (failed.reason or "")
    assert store.stage(staged(104.0), 104.0).id != a.id


def test_two_processes_on_one_sqlite_file_claim_each_approval_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    writer = SQLiteStore(path)
    for i in range(20):
        a = writer.stage(staged(100.0 + i, body=b"%d" % i, ttl=1000), 100.0 + i)
        writer.decide(a.id, approve=True, by="alice", reason=None, now=200.0)
    stores = [SQLiteStore(path) for _ in range(4)]
    claimed: list[str] = []
    lock = threading.Lock()

    def drain(store: Store) -> None:
        while (got := store.claim(300.0)) is not None:
            with lock:
                claimed.append(got.id)

    threads = [threading.Thread(target=drain, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 20 and len(set(claimed)) == 20
    assert {a.status for a in writer.approvals()} == {SENDING}


def test_four_clients_of_one_redis_claim_each_approval_once(redis_server: Any) -> None:
    from gitvow_proxy.store.redis_store import RedisStore

    writer = RedisStore(redis_server.url)
    for i in range(20):
        a = writer.stage(staged(100.0 + i, body=b"%d" % i, ttl=1000), 100.0 + i)
        writer.decide(a.id, approve=True, by="alice", reason=None, now=200.0)
    stores = [RedisStore(redis_server.url) for _ in range(4)]
    claimed: list[str] = []
    lock = threading.Lock()

    def drain(store: Store) -> None:
        while (got := store.claim(300.0)) is not None:
            with lock:
                claimed.append(got.id)

    threads = [threading.Thread(target=drain, args=(s,)) for s in stores for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 20 and len(set(claimed)) == 20
    assert {a.status for a in writer.approvals()} == {SENDING}
    assert writer.pending_approvals() == 0 and len(writer.approvals([SENDING])) == 20


def test_staged_headers_never_keep_credentials() -> None:
    fields = [("Authorization", "Bearer gvc_x"), ("Proxy-Authorization", "Basic eA=="), ("Cookie", "s=1"),
              ("Content-Type", "application/json"), ("Accept", "application/vnd.github+json"),
              ("X-GitHub-Api-Version", "2022-11-28"), ("PRIVATE-TOKEN", "glpat"), ("Host", "x")]
    assert [k for k, _ in kept_headers(fields)] == ["Content-Type", "Accept", "X-GitHub-Api-Version"]


def test_the_summary_reads_rest_and_graphql_bodies() -> None:
    rest = staged()
    written = {"title": "Add it", "body": "Why", "head": "feature", "base": "main", "operation": "pr.create"}
    assert rest.summary() == {**written, "writes": [written]}
    query = 'mutation { createPullRequest(input: {repositoryId: "R", baseRefName: "main", headRefName: "x", title: "T"}) { clientMutationId } }'
    graphql = Approval(**{**_fields(rest), "url": "https://ghes.test:443/api/graphql",
                          "body": json.dumps({"query": query}).encode()})
    shown = {k: v for k, v in graphql.summary().items() if k != "writes"}
    assert shown == {"field": "createPullRequest", "repository id": "R", "base": "main", "head": "x", "title": "T",
                     "operation": "pr.create"}
    merge = Approval(**{**_fields(rest), "operations": ("pr.merge",), "body": b""})
    assert merge.summary()["merge method"] == "the repository's default"
    assert rest.as_json()["request"] == "POST /api/v3/repos/team/app/pulls" and "body" not in rest.as_json()
    assert APPROVED != PENDING


def _fields(a: Approval) -> dict[str, object]:
    return {name: getattr(a, name) for name in Approval.__dataclass_fields__}


def test_the_chart_counts_request_decisions_by_verdict_and_reason() -> None:
    from gitvow_proxy.status import SPANS, decisions_over_time

    now = 10_000.0
    records = [
        {"at": now - 10, "verdict": "allow", "stage": "forward"},
        {"at": now - 20, "verdict": "deny", "reason": "hard_deny", "stage": "policy"},
        {"at": now - 3000, "verdict": "deny", "reason": "hard_deny", "stage": "policy"},
        {"at": now - 5, "verdict": "staged", "reason": "hard_deny", "stage": "approval"},
        {"at": now - 5, "verdict": "paused", "stage": "run_state"},
        {"at": now - 5, "verdict": "tunnel", "stage": "host"},
        {"at": now - 7200, "verdict": "allow", "stage": "forward"},  # outside the hour
    ]
    chart = decisions_over_time(records, SPANS["1h"], now)
    assert list(chart["series"]) == ["allow", "deny: hard_deny"]
    assert sum(chart["series"]["allow"]) == 1 and sum(chart["series"]["deny: hard_deny"]) == 2
    assert chart["series"]["deny: hard_deny"][-1] == 1 and chart["series"]["deny: hard_deny"][5] == 1  # 600 s into the hour, 120 s buckets


def test_notes_are_kept_beside_an_approval_and_never_change_it(store: Store) -> None:
    a = store.stage(staged(), 100.0)
    assert store.annotations(a.id) == {}
    store.annotate(a.id, "context", '{"kind": "merge"}')
    store.annotate(a.id.lower(), "notify", "{}")
    store.annotate(a.id, "context", '{"kind": "create"}')  # replaced, not added
    assert store.annotations(a.id) == {"context": '{"kind": "create"}', "notify": "{}"}
    assert store.approval(a.id) == a
