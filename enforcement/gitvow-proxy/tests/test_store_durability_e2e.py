"""What survives a restart of a ``redis-server`` kept with an append-only file, as
docs/proxy.md asks of production: the budget used, the run-time pauses, the canaries and the
approvals (a pending one still waits, a sent one is answered again and never sent twice)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxy_support import GITVOW, ProxyProcess, Upstream, client, comment, proxy_env, start_proxy

from gitvow_proxy.testing import REDIS_SERVER, RedisServer

pytestmark = pytest.mark.e2e

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


def test_a_redis_restart_with_aof_loses_nothing(
    api: Upstream, redis_aof: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{api.netloc}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{redis_aof.url}"

        [audit]
        path = "{tmp_path / 'audit.jsonl'}"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"

        [budget]
        window_seconds = 3600
        agents = {{ coder = {{ writes = 20 }} }}

        [approvals]
        poll_interval = 0.2
    """))
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
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
        assert len([s for s in api.seen if s.method == "POST" and "/team/durable/pulls" in s.path]) == 1
        assert not any("/team/frozen/" in s.path or canary in s.body.decode(errors="replace") for s in api.seen)
    finally:
        assert proxy.stop() == 0, proxy.log_text()
