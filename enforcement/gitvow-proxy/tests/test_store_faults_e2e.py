"""A hung state store (redis-server stopped with SIGSTOP) freezes nothing: reads keep their
latency and most of their throughput, writes are refused with ``state_unavailable`` within the
store's time bound, and ``/metrics`` answers without waiting on the store."""

from __future__ import annotations

import signal
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest
from proxy_support import Upstream, client, comment, proxy_env, start_proxy

from gitvow.testing import free_port
from gitvow_proxy.testing import RedisServer

pytestmark = pytest.mark.e2e


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


def test_a_hung_redis_freezes_no_read(
    api: Upstream, redis_server: RedisServer, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    admin = free_port()
    policy = tmp_path / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{api.netloc}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{redis_server.url}"

        [audit]
        path = "{tmp_path / 'audit.jsonl'}"

        [admin]
        listen = "127.0.0.1:{admin}"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"

        [budget]
        window_seconds = 3600
        agents = {{ coder = {{ writes = 1000 }} }}

        [approvals]
        poll_interval = 0.2
    """))
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    assert redis_server.proc is not None
    try:
        with client(proxy, "coder", ca_file) as reader, client(proxy, "coder", ca_file) as writer:
            assert comment(writer, api).status_code == 201
            normal, _ = _reads(reader, api, 2.0)
            refused: list[tuple[int, str | None, float]] = []

            def write_while_hung() -> None:
                for _ in range(5):
                    started = time.monotonic()
                    r = comment(writer, api)
                    refused.append((r.status_code, r.headers.get("x-gitvow-reason"), time.monotonic() - started))

            redis_server.proc.send_signal(signal.SIGSTOP)
            try:
                writes = threading.Thread(target=write_while_hung)
                writes.start()
                hung, slowest = _reads(reader, api, 2.0)
                started = time.monotonic()
                scraped = httpx.get(f"http://127.0.0.1:{admin}/metrics", timeout=10)
                scrape_took = time.monotonic() - started
                writes.join(timeout=30)
            finally:
                redis_server.proc.send_signal(signal.SIGCONT)
        assert slowest < 0.5, f"a read took {slowest:.2f}s while the store hung"
        assert hung >= 0.5 * normal, f"{hung} reads in 2s while the store hung, {normal} before"
        assert refused and all(code == 503 and reason == "state_unavailable" for code, reason, _ in refused), refused
        assert max(took for *_, took in refused) < 5.0
        assert scraped.status_code == 200 and "gitvow_store_up 0.0" in scraped.text
        assert scrape_took < 2.0
    finally:
        assert proxy.stop() == 0, proxy.log_text()
