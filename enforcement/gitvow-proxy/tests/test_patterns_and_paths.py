"""Repository patterns match whole segments in every gate, and a path a front end would rewrite
is refused before any of them: the proxy's gates with the real gitsmart (and Gitea) adapters."""

from __future__ import annotations

from typing import Any

import pytest

from gitvow.gates import Caller
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Request
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, MemoryStore

HOST = "git.example.test"


class Harness:
    def __init__(self, extra: dict[str, Any]) -> None:
        data: dict[str, Any] = {
            "hosts": {HOST: "gitsmart"},
            "agents": {"bot": {"mode": "issues_and_prs"}},
            **extra,
        }
        self.policy = parse_policy(data)
        self.engine = Engine(self.policy, installed())
        self.store = MemoryStore()
        self.gates = ProxyGates(self.policy, self.store, credentials={}, canaries={})

    def push(self, repo_path: str, agent: str = "bot", host: str = HOST) -> str:
        request = Request("GET", host, f"{repo_path}/info/refs", query="service=git-receive-pack")
        grant = self.policy.grant_for(agent)
        assert grant is not None
        decision: Decision = self.engine.decide(request, Caller(agent, grant), self.gates)
        return "forward" if decision.action is Action.FORWARD else str(decision.reason)


def test_paused_patterns_stop_at_a_slash_in_the_policy_and_in_the_store() -> None:
    h = Harness({"run_state": {"paused": ["team/*"]}})
    assert h.push("/team/app.git") == "repo_paused"
    assert h.push("/Team/App.git") == "repo_paused"
    assert h.push("/team/sub/app.git") == "forward"  # fnmatch's * crossed the slash
    h.store.set_flag(PAUSED, "team/**", True)
    assert h.push("/team/sub/app.git") == "repo_paused"
    h.store.set_flag(AUTO_MERGE_OFF, "team/*", True)  # stored as a pattern too
    assert h.store.flags(AUTO_MERGE_OFF) == frozenset({"team/*"})


def test_agent_repos_and_autonomy_patterns() -> None:
    h = Harness({"agents": {
        "scoped": {"mode": "issues_and_prs", "repos": ["team/*"]},
        "climber": {"mode": "advisory", "autonomy": {"team/*": "issues_and_prs", "team/frozen": "advisory"}},
    }})
    assert h.push("/team/app.git", "scoped") == "forward"
    assert h.push("/team/sub/app.git", "scoped") == "agent_repo_scope"
    assert h.push("/team/app.git", "climber") == "forward"
    assert h.push("/team/frozen.git", "climber") == "mode_denied"  # the exact key wins
    assert h.push("/team/sub/app.git", "climber") == "mode_denied"


def test_allowed_repos_pattern() -> None:
    h = Harness({"proxy": {"allowed_repos": ["team/*"]}})
    assert h.push("/team/app.git") == "forward"
    assert h.push("/team/sub/app.git") == "repo_not_in_config"


@pytest.mark.parametrize("spelling", ["/team//paused.git", "/team/./paused.git", "/team/%2e%2e/team/paused.git",
                                      "/team%2Fpaused.git"])
def test_a_rewritable_path_to_a_paused_repository_is_refused_first(spelling: str) -> None:
    h = Harness({"run_state": {"paused": ["team/paused"]}})
    assert h.push("/team/paused.git") == "repo_paused"
    assert h.push(spelling) == "path_not_canonical"


def test_gitea_merges_slashes_so_the_proxy_refuses_them() -> None:
    pytest.importorskip("gitvow_gitea", reason="the Gitea adapter plugin is not installed")
    h = Harness({"hosts": {"gitea.example.test": "gitea"}, "run_state": {"paused": ["team/paused"]}})
    assert h.push("/team/paused.git", host="gitea.example.test") == "repo_paused"
    assert h.push("/team//paused.git", host="gitea.example.test") == "path_not_canonical"
    # Gitea keeps an encoded slash inside its segment, so that is read, not refused.
    assert h.push("/team%2Fpaused.git", host="gitea.example.test") == "repo_paused"
