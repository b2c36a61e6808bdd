"""A hung state store (redis-server stopped with SIGSTOP) freezes nothing, with two replicas on
it: reads keep their latency and most of their throughput, writes are refused with
``state_unavailable`` within the store's time bound, and ``/metrics`` answers without waiting
on the store. ``test_store_off_loop_e2e`` shows that no store call runs on the event loop."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from proxy_support import ProxyProcess, Upstream, client, comment, github_policy, proxy_env, start_proxy

from gitvow.testing import free_port
from gitvow_proxy.testing import RedisServer

# Fault and durability tests: several processes each; the default run leaves them to the heavy one.
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]


def _reads(c: httpx.Client, api: Upstream, seconds: float) -> tuple[int, float]:
    """Reads sent back to back for ``seconds``: how many, and the slowest."""
    done, slowest = 0, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        assert c.get(api.url("/api/v3/repos/team/app")).status_code == 200
        slowest = max(slowest, time.monotonic() - started)
        done += 1
    return done, slowest


def _both(replicas: list[ProxyProcess], api: Upstream, ca_file: Path, seconds: float) -> tuple[int, float]:
    """Reads through both replicas at once for ``seconds``: how many in all, and the slowest."""
    results: list[tuple[int, float]] = []

    def read(replica: ProxyProcess) -> None:
        with client(replica, "coder", ca_file) as c:
            results.append(_reads(c, api, seconds))

    threads = [threading.Thread(target=read, args=(r,)) for r in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(n for n, _ in results), max(slowest for _, slowest in results)


def test_a_hung_redis_freezes_no_read(
    api: Upstream, redis_server: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """Two replicas on one ``redis-server``, which is stopped (SIGSTOP) for a few seconds:
    reads through both keep their latency and most of their throughput, writes through both
    are refused with ``state_unavailable`` within the store's bound, ``/metrics`` answers."""
    admins = [free_port(), free_port()]
    replicas: list[ProxyProcess] = []
    for index, admin in enumerate(admins):
        workdir = tmp_path / f"replica-{index}"
        workdir.mkdir()
        policy = github_policy(workdir / "policy.toml", api, ca_file, redis_server.url, f"""
            [admin]
            listen = "127.0.0.1:{admin}"

            [budget]
            window_seconds = 3600
            agents = {{ coder = {{ writes = 1000 }} }}

            [approvals]
            poll_interval = 0.2
        """)
        replicas.append(start_proxy(policy, workdir, proxy_env(broken_plugin_path)))
    assert redis_server.proc is not None
    try:
        writers = [client(r, "coder", ca_file) for r in replicas]
        try:
            assert [comment(w, api).status_code for w in writers] == [201, 201]
            normal: float = _both(replicas, api, ca_file, 2.0)[0]
            refused: list[tuple[int, str | None, float]] = []

            def write_while_hung(writer: httpx.Client) -> None:
                for _ in range(5):
                    started = time.monotonic()
                    r = comment(writer, api)
                    refused.append((r.status_code, r.headers.get("x-gitvow-reason"), time.monotonic() - started))

            redis_server.proc.send_signal(signal.SIGSTOP)
            try:
                writes = [threading.Thread(target=write_while_hung, args=(w,)) for w in writers]
                for t in writes:
                    t.start()
                hung, slowest = _both(replicas, api, ca_file, 2.0)
                scrapes: list[tuple[httpx.Response, float]] = []
                for admin in admins:
                    started = time.monotonic()
                    scrapes.append((httpx.get(f"http://127.0.0.1:{admin}/metrics", timeout=10),
                                    time.monotonic() - started))
                for t in writes:
                    t.join(timeout=30)
            finally:
                redis_server.proc.send_signal(signal.SIGCONT)
            # Normal is measured before and after the hang, so the machine's own load (shared
            # with other work) weighs on both sides of the comparison alike.
            normal = (normal + _both(replicas, api, ca_file, 2.0)[0]) / 2
        finally:
            for w in writers:
                w.close()
        assert slowest < 0.5, f"a read took {slowest:.2f}s while the store hung"
        assert hung >= 0.5 * normal, f"{hung} reads in 2s while the store hung, {normal} normally"
        assert len(refused) == 10, refused
        assert all(code == 503 and reason == "state_unavailable" for code, reason, _ in refused), refused
        assert max(took for *_, took in refused) < 5.0
        for scraped, took in scrapes:
            assert scraped.status_code == 200 and "gitvow_store_up 0.0" in scraped.text
            assert took < 2.0
    finally:
        for replica in replicas:
            assert replica.stop() == 0, replica.log_text()
