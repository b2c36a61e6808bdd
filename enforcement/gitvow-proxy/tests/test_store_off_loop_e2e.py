"""No state-store call that may wait runs on mitmproxy's event loop: a real ``gitvow proxy`` whose store is
wrapped (a test-only script, :data:`proxy_support.LOOP_GUARD_ADDON`) so that every call says
which thread made it, driven through every path that reaches the store from a hook or an
asyncio task: a write decided (budget taken), a write the forge refuses (budget given back), a
request staged, its approval sent and its answer recorded, the notifications' bookkeeping, and
a policy reload (the canaries the store issued). The one store call the loop makes is
``admit_async``, which never waits (``Store.admits_on_loop``). A hung store can then hold up only the
request that needs it (``test_store_faults_e2e`` stops a real ``redis-server`` to show it)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from proxy_support import (
    GITVOW,
    LOOP_GUARD_ADDON,
    Seen,
    Upstream,
    api_reply,
    client,
    comment,
    github_policy,
    proxy_env,
    start_proxy,
    wait_until,
)

from gitvow.testing import free_port

pytestmark = pytest.mark.e2e

PULL = {"title": "Add the thing", "body": "Adds it. Tested.", "head": "feature", "base": "main"}
REFUSED = "/api/v3/repos/team/app/issues/9/comments"


def _reply(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    if seen.route == REFUSED:  # a write the forge does not perform: its budget is given back
        return 422, {"Content-Type": "application/json"}, b'{"message": "Validation Failed"}'
    return api_reply(seen)


def test_every_store_call_from_the_proxy_runs_off_the_event_loop(
    api: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    guard = tmp_path / "guard"
    guard.mkdir()
    script = tmp_path / "loop_guard.py"
    script.write_text(LOOP_GUARD_ADDON)
    policy = github_policy(tmp_path / "policy.toml", api, ca_file, tmp_path / "state.sqlite", f"""
        [budget]
        window_seconds = 3600
        agents = {{ coder = {{ writes = 100 }} }}

        [approvals]
        poll_interval = 0.2

        [approvals.notify]
        attempts = 1
        timeout = 1
        webhooks = [{{ url = "http://127.0.0.1:{free_port()}/hook" }}]
    """, proxy="reload_interval = 0.2")
    api.routes["/api/"] = _reply
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_LOOP_GUARD": str(guard)}
    proxy = start_proxy(policy, tmp_path, env, extra=[f"scripts={script}"])
    try:
        wait_until(lambda: (guard / "ready").exists())
        with client(proxy, "coder", ca_file) as c:
            assert c.get(api.url("/api/v3/repos/team/app")).status_code == 200
            assert comment(c, api).status_code == 201
            assert c.post(api.url(REFUSED), json={"body": "refused by the forge"}).status_code == 422
            staged = c.post(api.url("/api/v3/repos/team/app/pulls"), json=PULL)
        assert staged.status_code == 403, staged.text
        ident = staged.headers["x-gitvow-approval"]
        operator_env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
        approved = subprocess.run([GITVOW, "approvals", "approve", ident, "--by", "alice", "--policy", str(policy)],
                                  capture_output=True, text=True, env=operator_env, timeout=60)
        assert approved.returncode == 0, approved.stderr
        wait_until(lambda: any(s.route.endswith("/pulls") and s.method == "POST" for s in api.seen))
        wait_until(lambda: f"approval {ident} sent" in proxy.log_text() or f'"id": "{ident}"' in _shown(proxy, ident))
        loads = proxy.log_text().count("loaded (hosts:")
        policy.write_text(policy.read_text() + "\n# touched: reloaded\n")
        wait_until(lambda: proxy.log_text().count("loaded (hosts:") > loads)
        wait_until(lambda: "not delivered" in (guard / "off-loop").read_text()
                   or "annotate" in (guard / "off-loop").read_text())
        time.sleep(0.5)  # a few sender rounds more
        on_loop = (guard / "on-loop").read_text() if (guard / "on-loop").exists() else ""
        off_loop = set((guard / "off-loop").read_text().split())
        awaited = set((guard / "awaited").read_text().splitlines()) if (guard / "awaited").exists() else set()
    finally:
        api.routes["/api/"] = api_reply
        assert proxy.stop() == 0, proxy.log_text()
    assert on_loop == "", f"store calls on the event loop:\n{on_loop}"
    # The second write was admitted on the loop by the one call that never waits (the first,
    # with no flags read yet, was decided on the worker: ``take`` below).
    assert awaited == {"admit_async loop"}, awaited
    # Every path was taken (off the loop): the guard saw what it guards.
    for call in ("take", "give_back", "stage", "claim", "approval", "finish", "canaries", "annotate", "approvals"):
        assert call in off_loop, (call, sorted(off_loop))
    shown = json.loads(_shown(proxy, ident))
    assert shown["status"] == "sent", shown


def _shown(proxy: object, ident: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    done = subprocess.run([GITVOW, "approvals", "show", ident, "--json", "--policy", str(proxy.policy)],  # type: ignore[attr-defined]
                          capture_output=True, text=True, env=env, timeout=60)
    return done.stdout if done.returncode == 0 else "{}"
