"""SIGTERM under write load with a slow forge: every forwarded write's answer reaches its client, on
one proxy and on one of two replicas sharing a ``redis-server`` (the next write goes to the other)."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from proxy_support import Upstream, client, github_policy, proxy_env, start_proxy, write_policy

from gitvow.testing import Reply, Seen
from gitvow_proxy.testing import RedisServer

# Fault and durability tests: several processes each; the default run leaves them to the heavy one.
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]

WRITES = 6
SLOW = 2.0


def slow_reply(seen: Seen) -> Reply:
    time.sleep(SLOW)  # the forge takes its time: the writes are in flight when SIGTERM comes
    return 200, {"Content-Type": "application/x-git-receive-pack-result"}, b"0000"


def test_sigterm_drains_the_writes_in_flight(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    upstream.routes["/team/app.git/git-receive-pack"] = slow_reply
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    answers: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()

    def push() -> None:
        try:
            with client(proxy, "coder", ca_file) as c:
                status = c.post(upstream.url("/team/app.git/git-receive-pack"), content=b"0000").status_code
            with lock:
                answers.append(status)
        except httpx.HTTPError as exc:
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=push) for _ in range(WRITES)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len([s for s in upstream.seen if s.path.endswith("git-receive-pack")]) < WRITES:
        assert time.monotonic() < deadline, "the writes never reached the forge"
        time.sleep(0.02)
    proxy.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    with pytest.raises(OSError):  # no longer listening while it drains
        socket.create_connection(("127.0.0.1", proxy.port), timeout=1).close()
    for t in threads:
        t.join(timeout=30)
    assert proxy.proc.wait(timeout=30) == 0, proxy.log_text()
    assert failures == []
    assert answers == [200] * WRITES  # every forwarded write's answer reached its client
    assert "in flight get their answers first" in proxy.log_text()


def test_sigterm_on_one_of_two_replicas_loses_no_write(
    api: Upstream, redis_server: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """Two replicas on one ``redis-server``, forge writes (issue comments) in flight through the
    first when it gets SIGTERM: each gets its answer, once, and the next write goes to the other."""
    slow_path = "/api/v3/repos/team/slow/issues/1/comments"

    def slow_comment(seen: Seen) -> Reply:
        time.sleep(SLOW)
        return 201, {"Content-Type": "application/json"}, b'{"id": 1}'

    api.routes = {slow_path: slow_comment, **api.routes}  # (routes match by prefix, first first)
    replicas = []
    for name in ("a", "b"):
        workdir = tmp_path / name
        workdir.mkdir()
        policy = github_policy(workdir / "policy.toml", api, ca_file, redis_server.url)
        replicas.append(start_proxy(policy, workdir, proxy_env(broken_plugin_path)))
    stopping, other = replicas
    answers: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            with client(stopping, "coder", ca_file) as c:
                status = c.post(api.url(slow_path), json={"body": f"write {n}"}).status_code
            with lock:
                answers.append(status)
        except httpx.HTTPError as exc:
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")

    try:
        threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITES)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len([s for s in api.seen if s.route == slow_path]) < WRITES:
            assert time.monotonic() < deadline, "the writes never reached the forge"
            time.sleep(0.02)
        stopping.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        with pytest.raises(OSError):  # it no longer listens: the next write goes to the other replica
            socket.create_connection(("127.0.0.1", stopping.port), timeout=1).close()
        with client(other, "coder", ca_file) as c:
            assert c.post(api.url(slow_path), json={"body": "write after"}).status_code == 201
        for t in threads:
            t.join(timeout=30)
        assert stopping.proc.wait(timeout=30) == 0, stopping.log_text()
    finally:
        api.routes.pop(slow_path, None)
        for replica in replicas:
            replica.stop()
    assert failures == []
    assert answers == [201] * WRITES  # every forwarded write's answer reached its client
    bodies = sorted(json.loads(s.body)["body"] for s in api.seen if s.route == slow_path)
    assert bodies == sorted([f"write {n}" for n in range(WRITES)] + ["write after"])  # each once
