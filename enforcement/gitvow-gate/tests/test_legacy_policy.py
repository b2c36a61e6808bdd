"""Policy files of gitvow 0.42 load unchanged; TOML works too; a broken policy blocks every call."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gitvow.errors import PolicyError
from gitvow_gate import gate_policy

from .conftest import LEGACY_DEFAULT, Hooked


def claude(command: str, cwd: Path) -> dict[str, object]:
    return {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "PreToolUse", "permission_mode": "default",
            "tool_name": "Bash", "tool_input": {"command": command}}


def decision(answer: Hooked) -> str:
    return str(answer.json()["hookSpecificOutput"]["permissionDecision"]) if answer.stdout else "allow"


def test_the_old_tools_default_policy_is_read_as_it_is(env: dict[str, str], repo: Path,
                                                        hook: Callable[..., Hooked]) -> None:
    # where gitvow 0.42 users have it: ~/.gitvow/policy.json
    home_policy = Path(env["HOME"], ".gitvow", "policy.json")
    home_policy.parent.mkdir()
    shutil.copy(LEGACY_DEFAULT, home_policy)
    loaded = gate_policy.load(str(repo))
    assert loaded.source == str(home_policy)
    assert [r.reason for r in loaded.bash_deny][:2] == ["recursive delete of root/home", "force push"]
    assert {"decisions", "intent", "outcomes", "sync", "runtime", "_doc"} <= set(loaded.ignored)
    denied = hook("claude", "PreToolUse", claude("git push --force origin main", repo), cwd=repo)
    assert decision(denied) == "deny"
    assert "force push" in denied.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert decision(hook("claude", "PreToolUse", claude("gh pr merge 3", repo))) == "ask"
    assert hook("claude", "PreToolUse", claude("ls -la", repo)) == Hooked(0, "", "")


def test_policy_check_lists_ignored_keys(cli: Callable[..., Hooked]) -> None:
    answer = cli("policy", "check", str(LEGACY_DEFAULT))
    assert answer.code == 0, answer.stderr
    assert "ignored" in answer.stdout
    for key in ("decisions", "intent", "outcomes", "sync", "runtime"):
        assert key in answer.stdout


def test_repository_policy_wins_over_home_and_default(env: dict[str, str], repo: Path,
                                                      write_policy: Callable[..., Path]) -> None:
    assert gate_policy.load(str(repo)).source == str(gate_policy.DEFAULT_POLICY)
    home_policy = Path(env["HOME"], ".gitvow", "policy.json")
    home_policy.parent.mkdir()
    home_policy.write_text("{}", encoding="utf-8")
    assert gate_policy.load(str(repo / "sub" / "dir")).source == str(home_policy)
    mine = write_policy(repo, {"bash_deny": [{"pattern": "make clean", "reason": "no"}]})
    (repo / "sub").mkdir()
    assert gate_policy.load(str(repo / "sub")).source == str(mine)


def test_toml_takes_the_same_keys(env: dict[str, str], repo: Path, write_policy: Callable[..., Path]) -> None:
    write_policy(repo, """
mcp_deny = ["mcp__.*__drop_.*"]

[[bash_deny]]
program = "kubectl"
verbs = ["delete"]
reason = "destructive kubectl"

[[bash_confirm]]
program = "git"
verbs = ["push"]
target = "branch=main$"
reason = "pushing to main"

[[providers]]
name = "topology"
command = "gitvow-provider-facts --store facts.db"
questions = ["route_gate"]

[agents.claude]
mode = "issues_only"
""", name="policy.toml")
    loaded = gate_policy.load(str(repo))
    assert loaded.bash_deny[0].programs == ("kubectl",)
    assert loaded.bash_confirm[0].target == "branch=main$"
    assert loaded.providers[0].argv == ("gitvow-provider-facts", "--store", "facts.db")
    assert loaded.providers[0].questions == ("route_gate",) and loaded.providers[0].timeout == 10
    assert loaded.agents == frozenset({"claude"})


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"bash_deny": [{"pattern": "x", "reson": "typo"}]}, "bash_deny.0.reson: unknown key"),
        ({"bash_denny": []}, "bash_denny: unknown key"),
        ({"bash_confirm": [{"program": "git"}]}, "needs a 'pattern', or 'program' and 'verbs'"),
        ({"path_confirm": [{"pattern": "(unclosed"}]}, "not a valid regular expression"),
        ({"bash_confirm": [{"program": "git", "verbs": ["push"], "when": "later"}]}, "bash_confirm.0.when"),
        ({"providers": [{"name": "p", "command": "x", "questions": ["route_gates"]}]}, "providers.0.questions.0"),
        ({"providers": [{"name": "p"}]}, "providers.0.command"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, env: dict[str, str], document: dict[str, object],
                                          expected: str) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        gate_policy.load_file(str(path))
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


@pytest.mark.parametrize("agent", ["claude", "codex", "cursor", "gemini", "copilot"])
def test_a_policy_that_cannot_load_blocks_every_call(repo: Path, write_policy: Callable[..., Path],
                                                     hook: Callable[..., Hooked], agent: str) -> None:
    path = write_policy(repo, '{"bash_deny": [')
    payloads = {
        "claude": ("PreToolUse", claude("ls", repo)),
        "codex": ("PreToolUse", {"cwd": str(repo), "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        "cursor": ("beforeShellExecution", {"command": "ls", "cwd": str(repo)}),
        "gemini": ("BeforeTool", {"cwd": str(repo), "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
        "copilot": ("preToolUse", {"cwd": str(repo), "toolName": "bash", "toolArgs": '{"command": "ls"}'}),
    }
    event, payload = payloads[agent]
    answer = hook(agent, event, payload, cwd=repo)
    text = answer.stdout + answer.stderr
    assert str(path) in text and "not valid JSON" in text
    if agent == "claude":
        assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    elif agent == "codex":
        assert answer.code == 2
    elif agent == "cursor":
        assert answer.json()["permission"] == "deny"
    elif agent == "gemini":
        assert answer.json()["decision"] == "deny"
    else:
        assert answer.json()["permissionDecision"] == "deny"


def test_an_edit_that_breaks_a_cached_policy_takes_effect_at_once(repo: Path, write_policy: Callable[..., Path],
                                                                  hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"bash_deny": [{"pattern": "make clean", "reason": "keeps the build"}]})
    assert decision(hook("claude", "PreToolUse", claude("make clean", repo))) == "deny"
    assert hook("claude", "PreToolUse", claude("ls", repo)).code == 0
    write_policy(repo, {"bash_deny": [{"pattern": "make clean", "reason": "keeps the build", "whn": "x"}]})
    broken = hook("claude", "PreToolUse", claude("ls", repo))
    assert decision(broken) == "deny" and "bash_deny.0.whn: unknown key" in broken.stdout


def test_old_cache_entries_are_pruned_when_a_new_one_is_written(tmp_path: Path, env: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    cache = tmp_path / "own-cache"
    monkeypatch.setenv("GITVOW_CACHE_DIR", str(cache))
    cache.mkdir()
    stale, fresh = cache / "00000000-1.json", cache / "00000000-2.json"
    for entry in (stale, fresh):
        entry.write_text("{}", encoding="utf-8")
    old = time.time() - gate_policy.CACHE_MAX_AGE - 60
    os.utime(stale, (old, old))
    policy = tmp_path / "policy.json"
    policy.write_text('{"mcp_deny": ["mcp__x__.*"]}', encoding="utf-8")
    assert gate_policy.load_file(str(policy)).mcp_deny[0] == "mcp__x__.*"
    names = sorted(p.name for p in cache.iterdir())
    assert stale.name not in names and fresh.name in names and len(names) == 2
