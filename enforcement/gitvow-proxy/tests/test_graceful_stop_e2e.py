"""SIGTERM under write load with a slow forge: every forwarded write's answer reaches its client."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from proxy_support import Upstream, client, proxy_env, start_proxy, write_policy

from gitvow.testing import Reply, Seen

pytestmark = pytest.mark.e2e

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
