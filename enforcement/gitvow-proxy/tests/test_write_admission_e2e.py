"""Budgeted writes decided on the event loop, through a real ``gitvow proxy``: the budget is
exact under concurrent writers, a pause committed between two writes stops the second, and
another writer holding the SQLite file neither loses a write nor holds up a read."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from proxy_support import GITVOW, Upstream, client, comment, github_policy, proxy_env, start_proxy

pytestmark = pytest.mark.e2e

BUDGET = 12


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.heavy)])  # Redis: the heavy run
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "redis":
        yield request.getfixturevalue("redis_server").url
    else:
        yield str(tmp_path / "state.sqlite")


def _operator(policy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(policy)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_concurrent_writes_take_the_budget_exactly_and_a_pause_stops_the_next(
    api: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path, state: str
) -> None:
    policy = github_policy(tmp_path / "policy.toml", api, ca_file, state, f"""
        [agents.limited]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_LIMITED"

        [budget]
        window_seconds = 3600
        agents = {{ coder = {{ writes = {BUDGET} }}, limited = {{ writes = 1000 }} }}
    """)
    api.clear()
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        with client(proxy, "coder", ca_file) as c, ThreadPoolExecutor(4) as pool:  # four writers at once
            codes = sorted(pool.map(lambda i: comment(c, api, body=f"comment {i}").status_code, range(BUDGET + 6)))
        assert codes == [201] * BUDGET + [429] * 6, codes
        assert len([s for s in api.seen if s.method == "POST"]) == BUDGET
        # An agent with room in its budget: a pause between two writes stops the second.
        with client(proxy, "limited", ca_file) as c:
            for _ in range(3):  # the flags read once, then writes admitted on the loop
                assert comment(c, api, repo="team/lib").status_code == 201
            assert _operator(policy, "pause", "team/lib").returncode == 0
            paused = comment(c, api, repo="team/lib")
            assert paused.status_code == 403 and paused.headers["x-gitvow-reason"] == "repo_paused", paused.text
            assert comment(c, api, repo="team/other").status_code == 201
            assert _operator(policy, "resume", "team/lib").returncode == 0
            assert comment(c, api, repo="team/lib").status_code == 201
        lines = [line for line in proxy.audit_lines() if line["agent"] == "coder"]
        assert sum(1 for line in lines if line["verdict"] == "allow" and line["method"] == "POST") == BUDGET
        assert sum(1 for line in lines if line["verdict"] == "throttle") == 6
    finally:
        assert proxy.stop() == 0, proxy.log_text()


def test_a_writer_holding_the_sqlite_file_loses_no_write_and_holds_up_no_read(
    api: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """A write the proxy's memory of the file admits needs no lock; one that needs the file's
    transaction (another connection committed since) does not wait for the lock on the loop:
    it is admitted on the store's worker once the other writer lets go, and reads flow
    meanwhile. Every unit reaches the file."""
    state = tmp_path / "state.sqlite"
    policy = github_policy(tmp_path / "policy.toml", api, ca_file, state, """
        [budget]
        window_seconds = 3600
        agents = { coder = { writes = 100 } }
    """)
    api.clear()
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        with client(proxy, "coder", ca_file) as c, client(proxy, "coder", ca_file) as reader:
            assert comment(c, api).status_code == 201  # the flags are read: the next write is decided on the loop
            holder = sqlite3.connect(state, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            assert comment(c, api).status_code == 201  # from memory: the file is unchanged, no lock needed
            holder.execute("INSERT INTO counters (key, value) VALUES ('another-writer', 1)")
            holder.execute("COMMIT")  # the file changed: the next write needs its transaction
            holder.execute("BEGIN IMMEDIATE")
            answered: list[int] = []
            writer = threading.Thread(target=lambda: answered.append(comment(c, api).status_code))
            writer.start()
            reads = [reader.get(api.url("/api/v3/repos/team/app")).status_code for _ in range(5)]
            assert reads == [200] * 5 and answered == []  # the write waits for the lock; reads do not
            holder.execute("ROLLBACK")
            holder.close()
            writer.join(timeout=30)
            assert answered == [201]
        deadline = time.monotonic() + 10
        while True:
            usage = sqlite3.connect(state).execute("SELECT n FROM windows WHERE key = 'budget:coder:writes'").fetchone()
            if usage == (3,) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert usage == (3,)
    finally:
        assert proxy.stop() == 0, proxy.log_text()
