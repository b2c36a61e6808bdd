"""What survives a restart of a ``redis-server`` kept with an append-only file, as
docs/proxy.md asks of production: the budget used, the run-time pauses, the canaries and the
approvals (a pending one still waits, a sent one is answered again and never sent twice)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxy_support import GITVOW, ProxyProcess, Upstream, client, comment, github_policy, proxy_env, start_proxy

from gitvow_proxy.testing import REDIS_SERVER, RedisServer

# Fault and durability tests: several processes each; the default run leaves them to the heavy one.
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]

PULL = {"title": "Add the thing", "body": "Adds it. Tested.", "head": "feature", "base": "main"}


@pytest.fixture
def redis_aof(tmp_path: Path) -> Iterator[RedisServer]:
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis")
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    yield server
    server.stop()


def operator(replica: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(replica.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


def _canary(replica: ProxyProcess) -> str:
    out = subprocess.run([GITVOW, "env", "--policy", str(replica.policy), "--agent", "coder", "--json",
                          "--confdir", str(replica.confdir)],
                         capture_output=True, text=True, check=True, env={**os.environ, **proxy_env(Path("/"))})
    return str(json.loads(out.stdout)["GH_TOKEN"])


def _used(replica: ProxyProcess) -> int:
    data = json.loads(operator(replica, "status", "--json").stdout)
    return int(next(a["writes_used"] for a in data["agents"] if a["agent"] == "coder"))


def _policy(tmp_path: Path, api: Upstream, redis: RedisServer, ca_file: Path) -> Path:
    policy = tmp_path / "policy.toml"
    github_policy(policy, api, ca_file, redis.url, """
        [budget]
        window_seconds = 3600
        agents = { coder = { writes = 20 } }

        [approvals]
        poll_interval = 0.2
    """)
    return policy


def test_a_redis_restart_with_aof_loses_nothing(
    api: Upstream, redis_aof: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    proxy = start_proxy(_policy(tmp_path, api, redis_aof, ca_file), tmp_path, proxy_env(broken_plugin_path))
    sent_url, pending_url = api.url("/api/v3/repos/team/durable/pulls"), api.url("/api/v3/repos/team/waits/pulls")
    try:
        with client(proxy, "coder", ca_file) as c:
            assert [comment(c, api, "team/durable").status_code for _ in range(3)] == [201] * 3
            sent_id = c.post(sent_url, json=PULL).headers["x-gitvow-approval"]
            pending_id = c.post(pending_url, json=PULL).headers["x-gitvow-approval"]
        assert operator(proxy, "pause", "team/frozen").returncode == 0
        assert operator(proxy, "approvals", "approve", sent_id, "--by", "alice").returncode == 0
        assert operator(proxy, "approvals", "wait", sent_id, "--timeout", "30").returncode == 0
        canary = _canary(proxy)
        used = _used(proxy)
        assert used >= 4  # three comments and the approved pull

        redis_aof.stop()
        redis_aof.start()  # the same directory: it loads its append-only file

        with client(proxy, "coder", ca_file) as c:
            deadline = time.monotonic() + 15
            while (read := c.get(api.url("/api/v3/repos/team/durable"))).status_code != 200:
                assert time.monotonic() < deadline, read.text
            assert _used(proxy) == used
            while (paused := comment(c, api, "team/frozen")).status_code == 503:  # until the proxy reconnects
                assert time.monotonic() < deadline, paused.text
                time.sleep(0.2)
            assert (paused.status_code, paused.headers.get("x-gitvow-reason")) == (403, "repo_paused")
            leaked = comment(c, api, "team/durable", body=f"my token is {canary}")
            assert (leaked.status_code, leaked.headers.get("x-gitvow-reason")) == (403, "canary_egress")
            again = c.post(sent_url, json=PULL)  # the recorded answer, not a second send
            assert (again.status_code, again.headers.get("x-gitvow-approval")) == (201, sent_id), again.text
            assert c.post(pending_url, json=PULL).headers.get("x-gitvow-approval") == pending_id
        listed = operator(proxy, "approvals", "list")
        assert pending_id in listed.stdout, listed
        shown = json.loads(operator(proxy, "approvals", "show", sent_id, "--json").stdout)
        assert (shown["status"], shown["response_status"]) == ("sent", 201)
        # A second replica (the same confdir: the same canary key) started after the restart sees it all too.
        other_dir = tmp_path / "other"
        shutil.copytree(proxy.confdir, other_dir / "confdir")
        other = start_proxy(_policy(other_dir, api, redis_aof, ca_file), other_dir, proxy_env(broken_plugin_path))
        try:
            assert _used(other) == used
            with client(other, "coder", ca_file) as c:
                paused = comment(c, api, "team/frozen")
                assert (paused.status_code, paused.headers.get("x-gitvow-reason")) == (403, "repo_paused")
                leaked = comment(c, api, "team/durable", body=f"my token is {canary}")
                assert (leaked.status_code, leaked.headers.get("x-gitvow-reason")) == (403, "canary_egress")
                again = c.post(sent_url, json=PULL)
                assert (again.status_code, again.headers.get("x-gitvow-approval")) == (201, sent_id), again.text
                assert c.post(pending_url, json=PULL).headers.get("x-gitvow-approval") == pending_id
        finally:
            assert other.stop() == 0, other.log_text()
        assert len([s for s in api.seen if s.method == "POST" and "/team/durable/pulls" in s.path]) == 1
        assert not any("/team/frozen/" in s.path or canary in s.body.decode(errors="replace") for s in api.seen)
    finally:
        assert proxy.stop() == 0, proxy.log_text()


def test_an_emptied_redis_never_silently_repeats_a_send(
    api: Upstream, redis_server: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """Redis restarted with no persistence forgets that a request was sent: the agent's retry is
    staged anew (a human decides again, nothing is sent by itself), and the new approval says
    that the records were lost and the forge must be checked before approving it."""
    proxy = start_proxy(_policy(tmp_path, api, redis_server, ca_file), tmp_path, proxy_env(broken_plugin_path))
    url = api.url("/api/v3/repos/team/lost/pulls")
    try:
        with client(proxy, "coder", ca_file) as c:
            first = c.post(url, json=PULL).headers["x-gitvow-approval"]
        assert operator(proxy, "approvals", "approve", first, "--by", "alice").returncode == 0
        assert operator(proxy, "approvals", "wait", first, "--timeout", "30").returncode == 0
        shown = json.loads(operator(proxy, "approvals", "show", first, "--json").stdout)
        assert shown["records_lost"] is None

        redis_server.stop()
        time.sleep(1.1)  # the new records begin later on the server's clock
        redis_server.start()  # empty

        with client(proxy, "coder", ca_file) as c:
            deadline = time.monotonic() + 15
            while (retry := c.post(url, json=PULL)).status_code == 503:
                assert time.monotonic() < deadline, retry.text
                time.sleep(0.2)
        assert retry.status_code == 403, retry.text
        assert "x-gitvow-approval" in retry.headers, retry.text + proxy.log_text()
        second = retry.headers["x-gitvow-approval"]
        assert second != first
        shown = json.loads(operator(proxy, "approvals", "show", second, "--json").stdout)
        assert shown["status"] == "pending" and "lost its records" in shown["records_lost"], shown
        assert "check the forge" in operator(proxy, "approvals", "show", second).stdout
        time.sleep(0.6)  # several sender polls
        assert len([s for s in api.seen if s.method == "POST" and "/team/lost/pulls" in s.path]) == 1
    finally:
        assert proxy.stop() == 0, proxy.log_text()
