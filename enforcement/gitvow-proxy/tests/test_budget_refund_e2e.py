"""A write the proxy forwards and the forge does not perform — it answers with an error, or
not at all — takes nothing from the agent's budget: a real ``gitvow proxy`` before a stand-in
forge that refuses the first writes, a budget of one write."""

from __future__ import annotations

from pathlib import Path

import pytest
from proxy_support import Upstream, client, comment, github_policy, proxy_env, start_proxy

pytestmark = pytest.mark.e2e


def test_a_write_the_forge_refuses_takes_nothing_from_the_budget(tmp_path: Path, ca_file: Path,
                                                               broken_plugin_path: Path, api: Upstream) -> None:
    """A forwarded write answered with an error (here a 401: the forge never performed it) gives
    its budget back; one that succeeds keeps it taken."""
    workdir = tmp_path / "budget"
    workdir.mkdir()
    policy = workdir / "policy.toml"
    github_policy(policy, api, ca_file, workdir / "state.sqlite", """
        [budget]
        window_seconds = 3600
        writes = 1
    """)
    answers = iter([401, 401, 201, 201])
    original = api.routes["/api/"]
    api.routes["/api/"] = lambda seen: (next(answers), {"Content-Type": "application/json"}, b"{}")
    running = start_proxy(policy, workdir, proxy_env(broken_plugin_path))
    try:
        with client(running, "coder", ca_file) as c:
            statuses = [comment(c, api).status_code for _ in range(4)]
    finally:
        api.routes["/api/"] = original
        assert running.stop() == 0, running.log_text()
    # two refused by the forge (budget given back), one performed, then the budget of one is spent
    assert statuses == [401, 401, 201, 429], statuses

