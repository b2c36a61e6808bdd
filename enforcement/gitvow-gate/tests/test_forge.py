"""Forge operations in a tool call get the proxy's verdict and the proxy's denial line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitvow.pipeline import Engine
from gitvow.plugins import installed
from gitvow.policy.load import load_policy
from gitvow.request import Classification

from .conftest import Hooked


def claude(command: str, repo: Path) -> dict[str, object]:
    return {"session_id": "s", "cwd": str(repo), "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}}


def proxy_line(policy: Path, agent: str, operations: tuple[str, ...], adapter: str, target: str) -> str:
    """The denial line the proxy would send for the same operation."""
    plugins = installed()
    loaded = load_policy(policy, relays=plugins.relays)
    engine = Engine(loaded, plugins)
    grant = loaded.grant_for(agent)
    assert grant is not None
    classification = Classification(operations=operations, adapter=adapter)
    verdict = engine.evaluate(classification, grant)
    assert not verdict.allowed
    return engine.message(verdict, classification, plugins.adapters[adapter], target)


gitsmart = pytest.mark.skipif("gitsmart" not in installed().adapters,
                              reason="the gitsmart adapter (gitvow-gitsmart) is not installed here")


@pytest.fixture
def forge_policy(repo: Path, write_policy: Callable[..., Path]) -> Path:
    return write_policy(repo, """
[[bash_confirm]]
program = "git"
verbs = ["push"]
reason = "pushing to a remote"

[agents.claude]
mode = "advisory"

[agents.codex]
mode = "issues_and_prs"
""", name="policy.toml")


@gitsmart
def test_git_push_below_its_mode_gets_the_proxys_line(repo: Path, forge_policy: Path,
                                                       hook: Callable[..., Hooked]) -> None:
    answer = hook("claude", "PreToolUse", claude("cd sub && git -C . push origin x", repo), cwd=repo)
    out = answer.json()["hookSpecificOutput"]
    # the forge refusal is final, so it wins over the rule that would only have asked
    assert out["permissionDecision"] == "deny"
    expected = proxy_line(forge_policy, "claude", ("git.push",), "gitsmart", "git push")
    assert out["permissionDecisionReason"] == expected
    assert expected.endswith("reason=mode_denied") and "git.push needs mode issues_and_prs" in expected


def test_reads_are_allowed_at_advisory(repo: Path, forge_policy: Path, hook: Callable[..., Hooked]) -> None:
    assert hook("claude", "PreToolUse", claude("git fetch origin && git status", repo), cwd=repo) == Hooked(0, "", "")


def test_an_agent_at_the_right_mode_falls_through_to_the_rules(repo: Path, forge_policy: Path,
                                                                 hook: Callable[..., Hooked]) -> None:
    answer = hook("codex", "PreToolUse", {"cwd": str(repo), "tool_name": "Bash",
                                          "tool_input": {"command": "git push origin x"}}, cwd=repo)
    assert answer.code == 2 and "CONFIRMATION REQUIRED (pushing to a remote)" in answer.stderr


def test_without_an_agents_entry_the_gate_is_the_old_tool(repo: Path, forge_policy: Path,
                                                           hook: Callable[..., Hooked]) -> None:
    answer = hook("cursor", "beforeShellExecution", {"command": "git push origin x", "cwd": str(repo)}, cwd=repo)
    assert answer.json()["permission"] == "ask"
    assert "reason=" not in answer.json()["agent_message"]


@gitsmart
def test_check_reports_the_forge_verdict(repo: Path, forge_policy: Path, cli: Callable[..., Hooked]) -> None:
    denied = cli("check", "--agent", "claude", "--", "git", "push", cwd=repo)
    assert denied.code == 2 and denied.stdout.startswith("DENY: gitvow refused git.push")
    assert denied.stdout.rstrip().endswith("reason=mode_denied")
    # without --agent, check judges as the hook does: as claude here, the forge stage included
    assert cli("check", "--", "git", "push", cwd=repo).stdout == denied.stdout
    # an agent the policy does not name skips the forge stage, as the hook does for it
    assert cli("check", "--agent", "nobody", "--", "git", "push", cwd=repo).stdout.startswith(
        "CONFIRM: pushing to a remote")


github = pytest.mark.skipif("github" not in installed().adapters, reason="the github adapter is not installed here")


@github
def test_gh_pr_merge_is_the_relay_the_proxy_names(repo: Path, write_policy: Callable[..., Path],
                                                  hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"agents": {"claude": {"mode": "issues_prs_merge"}}})
    answer = hook("claude", "PreToolUse", claude("gh pr merge 12 --squash", repo), cwd=repo)
    out = answer.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].endswith("reason=hard_deny")
    assert out["permissionDecisionReason"].startswith("gitvow refused pr.merge")
    # the default relay is the proxy's approval path: the gate names it, as the proxy's line does
    assert "pr.merge needs a human's approval" in out["permissionDecisionReason"]
    assert "stages it for a human" in out["permissionDecisionReason"]
    assert "`gitvow approvals wait ID`" in out["permissionDecisionReason"]


@github
def test_a_renamed_relay_keeps_the_adapters_hints(repo: Path, write_policy: Callable[..., Path],
                                                  hook: Callable[..., Hooked]) -> None:
    """Hints are keyed by operation: a relay renamed in the policy still names `gh pr merge`."""
    write_policy(repo, {"relays": {"land-it": {"usage": "land-it PR", "what": "merging"}},
                        "operations": {"pr.merge": {"relay": "land-it"}},
                        "agents": {"claude": {"mode": "issues_prs_merge"}}})
    answer = hook("claude", "PreToolUse", claude("gh pr merge 12 --squash", repo), cwd=repo)
    reason = answer.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert "use `land-it PR`" in reason and "`gh pr merge`" in reason


@github
def test_gh_issue_comment_is_allowed_by_converse(repo: Path, write_policy: Callable[..., Path],
                                                 hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"agents": {"claude": {"mode": "advisory", "capabilities": ["converse"]}}})
    ok = hook("claude", "PreToolUse", claude("gh issue comment 3 --body 'looks good'", repo), cwd=repo)
    assert ok == Hooked(0, "", "")
    denied = hook("claude", "PreToolUse", claude("gh issue create --title x --body y", repo), cwd=repo)
    assert denied.json()["hookSpecificOutput"]["permissionDecisionReason"].endswith("reason=mode_denied")


def test_a_broken_plugin_fails_closed_by_name(repo: Path, forge_policy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitvow import plugins
    from gitvow.errors import PluginError
    from gitvow_gate import gate_policy
    from gitvow_gate.call import GateCall
    from gitvow_gate.decide import decide

    policy = gate_policy.load(str(repo))
    broken = plugins.load(entry_points=False)
    broken.failures.append(PluginError("gitvow-bitbucket", "failed to load gitvow_bitbucket.plugin: ImportError: x"))
    monkeypatch.setattr(plugins, "installed", lambda: broken)
    # a fresh cache: the plugin index is built from this discovery, which records the failure
    monkeypatch.setenv("GITVOW_CACHE_DIR", str(repo.parent / "fresh-cache"))
    decision = decide(policy, GateCall.shell("git push origin x", str(repo)), "claude")
    assert decision.outcome == "deny" and "plugin 'gitvow-bitbucket'" in decision.reason
    assert decision.reason.endswith("reason=internal_error")


@gitsmart
def test_the_policys_own_table_and_relays_apply(repo: Path, write_policy: Callable[..., Path],
                                                hook: Callable[..., Hooked]) -> None:
    policy = write_policy(repo, """
[relays.ship-it]
usage = "ship-it BRANCH"
what = "pushing a branch"

[operations."git.push"]
relay = "ship-it"

[operations."git.fetch"]
min_mode = "issues_only"

[agents.claude]
mode = "issues_prs_merge"
autonomy = { "team/app" = "advisory" }
""", name="policy.toml")
    pushed = hook("claude", "PreToolUse", claude("git push origin x", repo), cwd=repo)
    reason = pushed.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason == proxy_line(policy, "claude", ("git.push",), "gitsmart", "git push")
    assert "use `ship-it BRANCH`" in reason and reason.endswith("reason=hard_deny")
    assert hook("claude", "PreToolUse", claude("git fetch", repo), cwd=repo) == Hooked(0, "", "")


@gitsmart
def test_adapter_options_are_validated_in_the_forge_stage(repo: Path, write_policy: Callable[..., Path],
                                                          hook: Callable[..., Hooked]) -> None:
    """The forge stage configures adapters as the proxy does: a bad option is refused by its key path."""
    write_policy(repo, {"adapters": {"gitsmart": {"commands_limit": 0}}, "agents": {"claude": {"mode": "issues_and_prs"}}})
    reason = hook("claude", "PreToolUse", claude("git push origin x", repo), cwd=repo).json()[
        "hookSpecificOutput"]["permissionDecisionReason"]
    assert "adapters.gitsmart.commands_limit" in reason and reason.endswith("reason=internal_error")
    write_policy(repo, {"adapters": {"gitsmart": {"commands_limit": 4096}}, "agents": {"claude": {"mode": "issues_and_prs"}}})
    assert hook("claude", "PreToolUse", claude("git push origin x", repo), cwd=repo) == Hooked(0, "", "")


def test_the_plugin_index_loads_one_adapter_and_notices_installs(repo: Path, forge_policy: Path,
                                                                 env: dict[str, str], tmp_path: Path) -> None:
    """A forge command imports only its program's plugin; a change on the import path rebuilds the index."""
    import json
    import subprocess
    import sys

    from gitvow_gate import plugin_index

    own = {**env, "GITVOW_CACHE_DIR": str(tmp_path / "index-cache")}
    probe = (
        "import io, json, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "from gitvow_gate.hook_client import main\n"
        "main(['--agent', 'claude', 'PreToolUse'])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('gitvow_') and m.count('.') == 0 "
        "or m in ('importlib.metadata', 'pluggy'))), file=sys.stderr)\n"
    )

    def loaded(command: str) -> list[str]:
        payload = json.dumps(claude(command, repo))
        done = subprocess.run([sys.executable, "-c", probe, payload], capture_output=True, text=True, env=own,
                              cwd=repo, check=False)
        result: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
        return result

    first = loaded("git push origin x")  # builds the index: full discovery, once
    assert "importlib.metadata" in first
    again = loaded("git push origin x")
    assert "gitvow_gitsmart" in again and "importlib.metadata" not in again and "pluggy" not in again
    assert not {"gitvow_github", "gitvow_gitlab", "gitvow_linear", "gitvow_gitea", "gitvow_proxy"} & set(again)
    index = json.loads((tmp_path / "index-cache" / "plugins.json").read_text())
    assert index["adapters"]["gitsmart"]["commands"] == ["git"] and index["failures"] == []
    # installing or removing a distribution changes a directory of the import path: the key moves
    site = next(p for p in sys.path if p.endswith("site-packages"))
    before = plugin_index.key(own)
    marker = Path(site, "gitvow_index_probe-0.dist-info")
    marker.mkdir()
    try:
        assert plugin_index.key(own) != before
    finally:
        marker.rmdir()
