"""Two ``gitvow proxy`` replicas sharing one real ``redis-server``, clients spread over both:
one budget, one set of pauses, one set of canaries, and both fail closed while Redis is gone.

The upstream is a GitHub Enterprise style stand-in on loopback (the ``github`` adapter);
httpx clients send through either replica.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxy_support import (
    GITVOW,
    ProxyProcess,
    Upstream,
    client,
    comment,
    from_agents,
    github_policy,
    proxy_env,
    start_proxy,
)

from gitvow_proxy.testing import REDIS_SERVER, RedisServer

# Fault and durability tests: several processes each; the default run leaves them to the heavy one.
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]

BUDGET = 12


@pytest.fixture(scope="module")
def redis_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis")
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def replicas(
    api: Upstream, redis_shared: RedisServer, ca_file: Path, broken_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[ProxyProcess]]:
    workdir = tmp_path_factory.mktemp("replicas")
    policy = workdir / "policy.toml"
    github_policy(policy, api, ca_file, redis_shared.url, f"""
        [agents.limited]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_LIMITED"

        [budget]
        window_seconds = 3600
        agents = {{ limited = {{ writes = {BUDGET} }} }}

        [approvals]
        poll_interval = 0.2
    """)
    env = proxy_env(broken_plugin_path)
    started = [start_proxy(policy, workdir, env) for _ in range(2)]
    yield started
    for replica in started:
        assert replica.stop() == 0, replica.log_text()


def test_budget_admits_exactly_n_over_both_replicas(replicas: list[ProxyProcess], api: Upstream, ca_file: Path) -> None:
    statuses: list[int] = []
    lock = threading.Lock()

    def send(replica: ProxyProcess) -> None:
        with client(replica, "limited", ca_file) as c:
            mine = [comment(c, api, "team/budget").status_code for _ in range(5)]
        with lock:
            statuses.extend(mine)

    threads = [threading.Thread(target=send, args=(replicas[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(statuses) == 40
    assert statuses.count(201) == BUDGET
    assert statuses.count(429) == 40 - BUDGET
    assert sum(1 for s in api.seen if s.method == "POST" and "/team/budget/" in s.path) == BUDGET


def operator(replica: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``gitvow …`` as the operator runs it: the policy names the Redis state, no agent secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(replica.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_gitvow_pause_is_seen_by_both_replicas(replicas: list[ProxyProcess], api: Upstream, ca_file: Path) -> None:
    clients = [client(r, "coder", ca_file) for r in replicas]
    try:
        assert [comment(c, api, "team/pausable").status_code for c in clients] == [201, 201]
        assert operator(replicas[0], "pause", "team/pausable").returncode == 0
        refused = [comment(c, api, "team/pausable") for c in clients]
        assert [r.status_code for r in refused] == [403, 403]
        assert [r.headers["x-gitvow-reason"] for r in refused] == ["repo_paused", "repo_paused"]
        assert [c.get(api.url("/api/v3/repos/team/pausable")).status_code for c in clients] == [200, 200]
        assert operator(replicas[0], "resume", "team/pausable").returncode == 0
        assert [comment(c, api, "team/pausable").status_code for c in clients] == [201, 201]
    finally:
        for c in clients:
            c.close()


def test_an_approval_staged_on_one_replica_is_sent_exactly_once(
    replicas: list[ProxyProcess], api: Upstream, ca_file: Path
) -> None:
    """Both replicas' senders watch the shared store; exactly one claims the approved request."""
    pull = {"title": "Add the thing", "body": "Adds it. Tested.", "head": "feature", "base": "main"}
    url = api.url("/api/v3/repos/team/approve/pulls")
    with client(replicas[0], "coder", ca_file) as c:
        staged = c.post(url, json=pull)
    assert staged.status_code == 403 and staged.headers["x-gitvow-reason"] == "hard_deny", staged.text
    ident = staged.headers["x-gitvow-approval"]
    with client(replicas[1], "coder", ca_file) as c:  # the same request on the other replica: the same approval
        assert c.post(url, json=pull).headers["x-gitvow-approval"] == ident
    assert not any("/team/approve/" in s.path for s in from_agents(api.seen))
    approved = operator(replicas[1], "approvals", "approve", ident, "--by", "alice")
    assert approved.returncode == 0, approved.stderr
    waited = operator(replicas[0], "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    time.sleep(1.0)  # several more polls of both senders
    sends = [s for s in api.seen if s.method == "POST" and s.path == "/api/v3/repos/team/approve/pulls"]
    assert len(sends) == 1
    assert json.loads(sends[0].body) == pull
    shown = json.loads(operator(replicas[0], "approvals", "show", ident, "--json").stdout)
    assert (shown["status"], shown["response_status"]) == ("sent", 201)


def agent_canary(replica: ProxyProcess, agent: str = "coder") -> str:
    """The canary ``gitvow env`` gives ``agent``, as the operator runs it beside the proxy (its confdir)."""
    out = subprocess.run([GITVOW, "env", "--policy", str(replica.policy), "--agent", agent, "--json",
                          "--confdir", str(replica.confdir)],
                         capture_output=True, text=True, check=True, env={**os.environ, **proxy_env(Path("/"))})
    return str(json.loads(out.stdout)["GH_TOKEN"])


def test_a_canary_from_gitvow_env_is_refused_on_either_replica(
    replicas: list[ProxyProcess], api: Upstream, ca_file: Path
) -> None:
    canary = agent_canary(replicas[0])
    assert canary.startswith("gvc_")
    for replica in replicas:
        with client(replica, "coder", ca_file) as c:
            refused = comment(c, api, "team/canary", body=f"my token is {canary}")
        assert refused.status_code == 403
        assert refused.headers["x-gitvow-reason"] == "canary_egress"
    assert not any("/team/canary/" in s.path for s in api.seen)


def test_an_emptied_redis_forgets_no_canary(
    replicas: list[ProxyProcess], api: Upstream, redis_shared: RedisServer, ca_file: Path
) -> None:
    """Redis restarted without persistence: the canary issued before, and the one issued after
    (the same token: derived from the proxy's key, not kept in Redis), are refused on both
    replicas, before and after a policy reload."""
    before = agent_canary(replicas[0])
    redis_shared.stop()
    redis_shared.start()  # empty: no persistence
    clients = [client(r, "coder", ca_file) for r in replicas]
    try:
        for c in clients:
            deadline = time.monotonic() + 15
            while (status := comment(c, api, "team/emptied").status_code) != 201:
                assert status == 503 and time.monotonic() < deadline, status
                time.sleep(0.2)
        after = agent_canary(replicas[1])
        assert after == before
        policy = replicas[0].policy
        for reloaded in (False, True):
            if reloaded:
                policy.write_text(policy.read_text() + "\n")
                for replica in replicas:
                    deadline = time.monotonic() + 15
                    while replica.log_text().count("loaded (hosts") < 2:
                        assert time.monotonic() < deadline, replica.log_text()
                        time.sleep(0.2)
            for c in clients:
                refused = comment(c, api, "team/emptied", body=f"token {before}")
                assert (refused.status_code, refused.headers.get("x-gitvow-reason")) == (403, "canary_egress")
    finally:
        for c in clients:
            c.close()
    assert not any("token" in s.body.decode(errors="replace") for s in api.seen if "/team/emptied/" in s.path)


def test_redis_gone_refuses_writes_and_coming_back_restores_service(
    replicas: list[ProxyProcess], api: Upstream, redis_shared: RedisServer, ca_file: Path
) -> None:
    outages = [(r.log_text().count("is unreachable"), r.log_text().count("is reachable again")) for r in replicas]
    clients = [client(r, "coder", ca_file) for r in replicas]
    try:
        assert [comment(c, api, "team/outage").status_code for c in clients] == [201, 201]
        redis_shared.stop()
        for _ in range(3):
            refused = [comment(c, api, "team/outage") for c in clients]
            assert [r.status_code for r in refused] == [503, 503]
            assert [r.headers["x-gitvow-reason"] for r in refused] == ["state_unavailable"] * 2
            assert all("retry-after" in r.headers for r in refused)
            # Reads need no state: they keep working.
            assert [c.get(api.url("/api/v3/repos/team/outage")).status_code for c in clients] == [200, 200]
        redis_shared.start()
        for c in clients:
            deadline = time.monotonic() + 15
            while (status := comment(c, api, "team/outage").status_code) != 201:
                assert status == 503 and time.monotonic() < deadline, status
                time.sleep(0.2)
    finally:
        for c in clients:
            c.close()
    assert sum(1 for s in api.seen if s.method == "POST" and "/team/outage/" in s.path) == 4
    for replica, (down, up) in zip(replicas, outages, strict=True):
        log = replica.log_text()  # one line each way for this outage, not one per request
        assert log.count("is unreachable") == down + 1, log
        assert log.count("is reachable again") == up + 1, log


def test_status_counts_every_replicas_decisions_from_the_store(
    replicas: list[ProxyProcess], api: Upstream, redis_shared: RedisServer, ca_file: Path, tmp_path: Path
) -> None:
    """Each replica flushes its decision counts, refusals and counts over time to Redis about
    once a second; ``gitvow status`` (and the desk, which shows what it gathers) reads the
    cluster's, not one replica's audit log: here the operator's policy names an audit log of
    its own, which no replica writes."""
    elsewhere = github_policy(tmp_path / "policy.toml", api, ca_file, redis_shared.url)

    def status() -> dict[str, object]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
        done = subprocess.run([GITVOW, "status", "--json", "--policy", str(elsewhere)], capture_output=True,
                              text=True, env=env, timeout=60)
        return dict(json.loads(done.stdout))

    def charted(data: dict[str, object], series: str) -> int:
        return sum(dict(data["decisions"]["series"]).get(series, []))  # type: ignore[index]

    def settled() -> dict[str, object]:
        """The cluster's view once what the replicas decided before this test is flushed
        (each flushes about once a second): two readings a flush apart agree."""
        deadline, last = time.monotonic() + 15, status()
        while True:
            time.sleep(1.2)
            now = status()
            if now["decision_totals"] == last["decision_totals"] or time.monotonic() > deadline:
                return now
            last = now

    before = settled()
    assert before["view"] == "every replica (the state store)"
    allowed_before = dict(before["decision_totals"]).get("allow", 0)  # type: ignore[call-overload]
    clients = [client(r, "coder", ca_file) for r in replicas]
    try:
        for c in clients:
            assert [comment(c, api, "team/tally").status_code for _ in range(3)] == [201] * 3
        canary = agent_canary(replicas[1])
        assert comment(clients[1], api, "team/tally", body=f"token {canary}").status_code == 403
    finally:
        for c in clients:
            c.close()
    deadline = time.monotonic() + 10
    while True:
        after = status()
        totals = dict(after["decision_totals"])  # type: ignore[call-overload]
        if totals.get("allow", 0) - allowed_before >= 6 and totals.get("deny: canary_egress", 0) >= 1:
            break
        assert time.monotonic() < deadline, (before, after)
        time.sleep(0.3)
    assert totals["allow"] - allowed_before == 6
    assert not (tmp_path / "audit.jsonl").exists()  # nothing of it is read from a local file
    assert charted(after, "allow") - charted(before, "allow") == 6, (before["decisions"], after["decisions"])
    assert charted(after, "deny: canary_egress") >= 1
    # Among the cluster's latest refusals (a replica that could not flush during an earlier
    # test's outage may flush its own after this test's began: order across replicas is the flushes').
    refused = [(r["reason"], r["path"]) for r in after["recent_refusals"]]  # type: ignore[attr-defined]
    assert ("canary_egress", "/api/v3/repos/team/tally/issues/1/comments") in refused, refused
    assert canary not in json.dumps(after)


def test_metrics_count_every_replicas_decisions(
    replicas: list[ProxyProcess], api: Upstream, redis_shared: RedisServer, ca_file: Path, broken_plugin_path: Path,
    tmp_path: Path,
) -> None:
    """A third replica that decided nothing serves the decisions of the other two in its
    ``/metrics``, read from the store."""
    import httpx

    from gitvow.testing import free_port

    admin = free_port()
    policy = tmp_path / "policy.toml"
    github_policy(policy, api, ca_file, redis_shared.url, f"""
        [admin]
        listen = "127.0.0.1:{admin}"
    """)
    watcher = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        def allowed() -> float:
            text = httpx.get(f"http://127.0.0.1:{admin}/metrics", timeout=10).text
            line = next((x for x in text.splitlines()
                         if x.startswith('gitvow_cluster_decisions_total{reason="",verdict="allow"}')), None)
            return float(line.rsplit(" ", 1)[1]) if line else 0.0

        time.sleep(1.5)  # earlier tests' counts are flushed
        before = allowed()
        for replica in replicas:
            with client(replica, "coder", ca_file) as c:
                assert [comment(c, api, "team/metrics").status_code for _ in range(2)] == [201, 201]
        deadline = time.monotonic() + 10
        while (now := allowed()) < before + 4:
            assert time.monotonic() < deadline, (before, now)
            time.sleep(0.3)
        assert now == before + 4
        assert not any("/team/metrics/" in line.get("path", "") for line in watcher.audit_lines())
    finally:
        assert watcher.stop() == 0, watcher.log_text()
