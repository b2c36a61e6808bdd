"""An approval whose sender died mid-send is never out of sight: a ``gitvow proxy`` killed with
SIGKILL while a slow forge holds the approved request leaves it in ``sending``; past
``[approvals] stuck_after`` it is listed, counted by ``status`` and ``/metrics`` (read through a
second replica on the same ``redis-server``), the agent's retry and ``approvals wait`` say its
outcome is unknown, and an operator resolves it: never a second send."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from proxy_support import (
    GITVOW,
    ProxyProcess,
    Seen,
    Upstream,
    api_reply,
    client,
    github_policy,
    proxy_env,
    start_proxy,
    start_upstream,
)

from gitvow.testing import free_port
from gitvow_proxy.testing import RedisServer

# Fault and durability tests: several processes each; the default run leaves them to the heavy one.
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]

SLOW = "/api/v3/repos/team/slow/pulls"
MERGE = "/api/v3/repos/team/slow/pulls/9/merge"
HEAD = "a1" * 20
PULL = {"title": "Add the thing", "body": "Adds it. Tested.", "head": "feature", "base": "main"}


@pytest.fixture
def slow_forge(ca: trustme.CA, tmp_path: Path) -> Iterator[tuple[Upstream, threading.Event]]:
    """A GitHub stand-in whose pull creation on ``team/slow`` waits until released."""
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    release = threading.Event()
    server = start_upstream(ca, tmp_path / "forge-root")

    def slow(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        release.wait(timeout=60)
        return 201, {"Content-Type": "application/json"}, json.dumps({"number": 9}).encode()

    merged: list[bool] = []

    def merge(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        release.wait(timeout=60)
        merged.append(True)
        return 200, {"Content-Type": "application/json"}, json.dumps({"merged": True, "sha": "b2" * 20}).encode()

    def pull(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        found = {"number": 9, "title": "Speed up", "state": "closed" if merged else "open", "merged": bool(merged),
                 "user": {"login": "coder"}, "head": {"ref": "speed", "sha": HEAD}, "base": {"ref": "main"},
                 "mergeable": True, "html_url": "https://forge.test/team/slow/pull/9"}
        return 200, {"Content-Type": "application/json"}, json.dumps(found).encode()

    server.routes[MERGE] = merge  # (routes match by prefix, first first)
    server.routes[f"{SLOW}/9/files"] = lambda seen: (200, {"Content-Type": "application/json"}, b"[]")
    server.routes[f"{SLOW}/9"] = pull
    server.routes[SLOW] = slow
    server.routes["/api/"] = api_reply
    yield server, release
    release.set()
    server.server.shutdown()


def _policy(path: Path, forge: Upstream, redis: RedisServer, ca_file: Path, admin: int) -> Path:
    return github_policy(path, forge, ca_file, redis.url, f"""
        [admin]
        listen = "127.0.0.1:{admin}"

        [approvals]
        poll_interval = 0.2
        stuck_after = 5
    """)


def _replica(workdir: Path, forge: Upstream, redis: RedisServer, ca_file: Path, env: dict[str, str],
             admin: int | None = None) -> ProxyProcess:
    """A replica on the shared ``redis`` with a directory (policy, audit log) of its own."""
    workdir.mkdir()
    return start_proxy(_policy(workdir / "policy.toml", forge, redis, ca_file, admin or free_port()), workdir, env)


def operator(replica: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(replica.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


def _until(check: object, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_a_sender_killed_mid_send_leaves_a_visible_resolvable_approval(
    slow_forge: tuple[Upstream, threading.Event], redis_server: RedisServer, ca_file: Path,
    broken_plugin_path: Path, tmp_path: Path,
) -> None:
    forge, release = slow_forge
    env = proxy_env(broken_plugin_path)
    first = _replica(tmp_path / "a", forge, redis_server, ca_file, env)
    try:
        with client(first, "coder", ca_file) as c:
            staged = c.post(forge.url(SLOW), json=PULL)
        assert staged.status_code == 403, staged.text
        ident = staged.headers["x-gitvow-approval"]
        assert operator(first, "approvals", "approve", ident, "--by", "alice").returncode == 0
        _until(lambda: any(s.path == SLOW and s.method == "POST" for s in forge.seen))  # the forge holds the send
        with client(first, "coder", ca_file) as c:  # not stuck yet: the agent is told it is being sent
            early = c.post(forge.url(SLOW), json=PULL)
        assert early.headers.get("x-gitvow-reason") == "approval_sending", early.text
        assert "being sent" in early.text
        first.proc.kill()  # SIGKILL: the sender dies before the forge answers
        first.proc.wait()
    finally:
        first.stop()
    admin = free_port()
    second = _replica(tmp_path / "b", forge, redis_server, ca_file, env, admin)
    try:
        _until(lambda: "STUCK sending" in operator(second, "approvals", "list").stdout)  # past stuck_after
        assert f"state store {redis_server.url};" in second.log_text()  # redis://, not redis:/
        listed = operator(second, "approvals", "list")
        assert listed.returncode == 0 and ident in listed.stdout and "STUCK sending" in listed.stdout, listed
        assert "unknown" in listed.stderr, listed.stderr
        status = operator(second, "status", "--json")
        assert [a["id"] for a in json.loads(status.stdout)["stuck_approvals"]] == [ident], status
        human = operator(second, "status")
        assert "STUCK approvals" in human.stdout and ident in human.stdout, human.stdout
        metrics = httpx.get(f"http://127.0.0.1:{admin}/metrics", timeout=10).text
        assert "gitvow_approvals_stuck 1.0" in metrics, metrics
        waited = operator(second, "approvals", "wait", ident, "--timeout", "5")
        assert waited.returncode == 4 and "resolve" in waited.stderr and "unknown" in waited.stderr, waited
        with client(second, "coder", ca_file) as c:
            retry = c.post(forge.url(SLOW), json=PULL)
        assert retry.status_code == 403 and retry.headers.get("x-gitvow-reason") == "approval_stuck", retry.text
        assert "needs a human's approval" not in retry.text and "resolve" in retry.text
        assert operator(second, "approvals", "resolve", ident, "--failed", "--sent").returncode == 2  # one, not both
        resolved = operator(second, "approvals", "resolve", ident, "--sent", "--by", "bob", "--note", "PR 9 exists")
        assert resolved.returncode == 0, resolved.stderr
        again = operator(second, "approvals", "resolve", ident, "--failed")
        assert again.returncode == 2 and "not stuck" in again.stderr
        with client(second, "coder", ca_file) as c:
            after = c.post(forge.url(SLOW), json=PULL)
        assert after.headers.get("x-gitvow-reason") == "approval_resolved_sent", after.text
        assert "bob" in after.text
        waited = operator(second, "approvals", "wait", ident, "--timeout", "5")
        assert waited.returncode == 0 and "bob" in waited.stdout, waited
        assert ident not in operator(second, "approvals", "list").stdout
        assert "gitvow_approvals_stuck 0.0" in httpx.get(f"http://127.0.0.1:{admin}/metrics", timeout=10).text
        release.set()
        time.sleep(0.6)  # several sender polls: nothing sends it again
        assert len([s for s in forge.seen if s.path == SLOW and s.method == "POST"]) == 1
        lines = [json.loads(x) for x in second.audit.read_text().splitlines()]
        assert any(x.get("verdict") == "resolved_sent" and x.get("by") == "bob" for x in lines)
    finally:
        assert second.stop() == 0, second.log_text()


def test_a_stuck_merge_is_resolved_by_asking_the_forge(
    slow_forge: tuple[Upstream, threading.Event], redis_server: RedisServer, ca_file: Path,
    broken_plugin_path: Path, tmp_path: Path,
) -> None:
    """A merge's outcome is the forge's to tell: the replica that takes over asks it about the
    stuck merge and resolves it as sent (merged), with an audit line; nothing is sent again."""
    forge, release = slow_forge
    env = proxy_env(broken_plugin_path)
    first = _replica(tmp_path / "a", forge, redis_server, ca_file, env)
    try:
        with client(first, "coder", ca_file) as c:
            staged = c.put(forge.url(MERGE), json={"merge_method": "merge"})
        assert staged.status_code == 403, staged.text
        ident = staged.headers["x-gitvow-approval"]
        _until(lambda: '"merged": false' in operator(first, "approvals", "show", ident, "--json").stdout)  # its context
        assert operator(first, "approvals", "approve", ident, "--by", "alice").returncode == 0
        _until(lambda: any(s.path == MERGE and s.method == "PUT" for s in forge.seen))  # the forge holds the merge
        first.proc.kill()  # SIGKILL: the sender dies before the forge answers
        first.proc.wait()
    finally:
        first.stop()
    release.set()  # the forge merges it: the outcome the dead sender never recorded
    second = _replica(tmp_path / "b", forge, redis_server, ca_file, env)
    try:
        _until(lambda: json.loads(operator(second, "approvals", "show", ident, "--json").stdout)["status"] == "sent",
               timeout=60)
        shown = json.loads(operator(second, "approvals", "show", ident, "--json").stdout)
        assert "asked the forge" in shown["reason"] and "pull request #9 is merged" in shown["reason"], shown
        with client(second, "coder", ca_file) as c:
            retry = c.put(forge.url(MERGE), json={"merge_method": "merge"})
        assert retry.headers.get("x-gitvow-reason") == "approval_resolved_sent", retry.text
        assert len([s for s in forge.seen if s.path == MERGE and s.method == "PUT"]) == 1
        lines = [json.loads(x) for x in second.audit.read_text().splitlines()]
        assert any(x.get("verdict") == "resolved_sent" and x.get("by") == "gitvow (asked the forge)" for x in lines)
        assert "resolved as sent" in second.log_text()
    finally:
        assert second.stop() == 0, second.log_text()
