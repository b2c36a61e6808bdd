"""Each agent's real hook payload on stdin, each agent's own answer format out."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Hooked

FORCE = "git push --force origin main"
MERGE = "gh pr merge 7 --squash"


@pytest.fixture
def policy(repo: Path, write_policy: Callable[..., Path]) -> Path:
    return write_policy(repo, {
        "bash_deny": [{"program": "git", "verbs": ["push\\b.*?(?:--force|\\s-f\\b)"], "reason": "force push"}],
        "bash_confirm": [{"program": "gh", "verbs": ["pr\\s+merge"], "reason": "GitHub mutation"}],
        "path_confirm": [{"pattern": "(^|/)\\.github/workflows/", "reason": "edits CI definitions"}],
        "mcp_deny": ["mcp__.*__delete_.*"],
    })


# -- Claude Code ---------------------------------------------------------------------


def claude(tool: str, tool_input: dict[str, object], repo: Path, mode: str = "default") -> dict[str, object]:
    return {"session_id": "abc", "transcript_path": "/tmp/t.jsonl", "cwd": str(repo), "permission_mode": mode,
            "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input}


def test_claude(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    allowed = hook("claude", "PreToolUse", claude("Bash", {"command": "ls", "description": "list"}, repo))
    assert allowed == Hooked(0, "", "")  # Claude Code's own permission prompts stay in force
    denied = hook("claude", "PreToolUse", claude("Bash", {"command": FORCE}, repo))
    assert denied.code == 0 and denied.json() == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "gitvow: BLOCKED by policy (force push)."}}
    asked = hook("claude", "PreToolUse", claude("Bash", {"command": MERGE}, repo))
    assert asked.json()["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "GitHub mutation" in asked.json()["hookSpecificOutput"]["permissionDecisionReason"]
    edit = hook("claude", "PreToolUse", claude("Write", {"file_path": str(repo / ".github/workflows/ci.yml"),
                                                         "content": "on: push"}, repo, mode="acceptEdits"))
    assert edit.json()["hookSpecificOutput"]["permissionDecision"] == "ask"
    mcp = hook("claude", "PreToolUse", claude("mcp__github__delete_file", {"path": "x"}, repo))
    assert mcp.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("mode", ["bypassPermissions", "dontAsk", None])
def test_claude_confirm_blocks_where_nobody_would_see_the_question(repo: Path, policy: Path,
                                                                   hook: Callable[..., Hooked],
                                                                   mode: str | None) -> None:
    payload = claude("Bash", {"command": MERGE}, repo)
    if mode is None:
        del payload["permission_mode"]
    else:
        payload["permission_mode"] = mode
    answer = hook("claude", "PreToolUse", payload)
    assert answer.code == 2 and answer.stdout == ""
    assert answer.stderr.startswith("gitvow: CONFIRMATION REQUIRED (GitHub mutation)")


def test_claude_other_events_and_tools_are_allowed(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    assert hook("claude", "PostToolUse", claude("Bash", {"command": FORCE}, repo)) == Hooked(0, "", "")
    assert hook("claude", "PreToolUse", claude("Read", {"file_path": "/etc/passwd"}, repo)) == Hooked(0, "", "")


# -- Codex ---------------------------------------------------------------------------


def test_codex(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    base = {"session_id": "c1", "cwd": str(repo), "hook_event_name": "PreToolUse", "model": "gpt-5-codex"}
    ok = hook("codex", "PreToolUse", {**base, "tool_name": "Bash", "tool_input": {"command": ["bash", "-lc", "ls"]}})
    assert ok == Hooked(0, "", "")
    denied = hook("codex", "PreToolUse", {**base, "tool_name": "Bash",
                                          "tool_input": {"command": ["bash", "-lc", f"cd app && {FORCE}"]}})
    assert denied.code == 2 and "force push" in denied.stderr
    confirm = hook("codex", "PreToolUse", {**base, "tool_name": "Bash", "tool_input": {"command": MERGE}})
    assert confirm.code == 2 and "CONFIRMATION REQUIRED (GitHub mutation)" in confirm.stderr
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** Add File: .github/workflows/x.yml\n+on: push\n*** End Patch"
    patched = hook("codex", "PreToolUse", {**base, "tool_name": "apply_patch", "tool_input": {"command": patch}})
    assert patched.code == 2
    assert "edits CI definitions: .github/workflows/x.yml [file: .github/workflows/x.yml]" in patched.stderr
    garbled = hook("codex", "PreToolUse", {**base, "tool_name": "apply_patch", "tool_input": {"input": "*** Begin Pa"}})
    assert garbled.code == 2 and "an edit whose files the gate cannot read" in garbled.stderr
    piped = hook("codex", "PreToolUse", {**base, "tool_name": "Bash",
                                         "tool_input": {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{patch}\nEOF"]}})
    assert piped.code == 2 and ".github/workflows/x.yml" in piped.stderr


# -- Cursor --------------------------------------------------------------------------


def test_cursor(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    base = {"conversation_id": "k", "generation_id": "g", "workspace_roots": [str(repo)]}
    ok = hook("cursor", "beforeShellExecution", {**base, "hook_event_name": "beforeShellExecution",
                                                  "command": "npm test", "cwd": str(repo)})
    assert ok.code == 0 and ok.json() == {"permission": "allow"}
    denied = hook("cursor", "beforeShellExecution", {**base, "command": FORCE, "cwd": str(repo)})
    assert denied.json()["permission"] == "deny" and "force push" in denied.json()["agent_message"]
    asked = hook("cursor", "beforeShellExecution", {**base, "command": MERGE, "cwd": str(repo)})
    assert asked.json()["permission"] == "ask" and "GitHub mutation" in asked.json()["user_message"]
    mcp = hook("cursor", "beforeMCPExecution", {**base, "tool_name": "delete_issue",
                                                 "tool_input": json.dumps({"number": 3}), "url": "https://mcp.test",
                                                 "mcp_server_name": "github"})
    assert mcp.json()["permission"] == "deny" and "mcp__github__delete_issue" in mcp.json()["agent_message"]
    # preToolUse also fires for shells: beforeShellExecution judges those
    dup = hook("cursor", "preToolUse", {**base, "tool_name": "Shell", "tool_input": {"command": FORCE}})
    assert dup.json() == {"permission": "allow"}
    write = hook("cursor", "preToolUse", {**base, "tool_name": "Write", "cwd": str(repo),
                                          "tool_input": {"file_path": ".github/workflows/ci.yml", "content": "x"}})
    assert write.json()["permission"] == "ask"
    assert hook("cursor", "stop", {**base, "status": "completed"}).json() == {"permission": "allow"}


# -- Gemini CLI ----------------------------------------------------------------------


def test_gemini(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    base = {"session_id": "g", "transcript_path": "", "cwd": str(repo), "hook_event_name": "BeforeTool",
            "timestamp": "2026-11-30T12:00:00Z"}
    ok = hook("gemini", "BeforeTool", {**base, "tool_name": "run_shell_command", "tool_input": {"command": "ls"}})
    assert ok.code == 0 and ok.json() == {"decision": "allow"}
    denied = hook("gemini", "BeforeTool", {**base, "tool_name": "run_shell_command", "tool_input": {"command": FORCE}})
    assert denied.json()["decision"] == "deny" and "force push" in denied.json()["reason"]
    confirm = hook("gemini", "BeforeTool", {**base, "tool_name": "run_shell_command", "tool_input": {"command": MERGE}})
    assert confirm.json()["decision"] == "deny"  # Gemini cannot ask: the reason tells the agent to
    assert "Ask the user" in confirm.json()["reason"]
    replace = hook("gemini", "BeforeTool", {**base, "tool_name": "replace", "tool_input": {
        "file_path": str(repo / ".github/workflows/ci.yml"), "old_string": "a", "new_string": "b"}})
    assert replace.json()["decision"] == "deny" and "edits CI definitions" in replace.json()["reason"]
    mcp = hook("gemini", "BeforeTool", {**base, "tool_name": "delete_repo", "tool_input": {},
                                        "mcp_context": {"server_name": "github", "tool_name": "delete_repo"}})
    assert mcp.json()["decision"] == "deny"
    assert hook("gemini", "SessionStart", {**base, "source": "startup"}).json() == {"decision": "allow"}


# -- Copilot CLI ---------------------------------------------------------------------


def test_copilot(repo: Path, policy: Path, hook: Callable[..., Hooked]) -> None:
    base = {"timestamp": 1764500000000, "cwd": str(repo)}
    ok = hook("copilot", "preToolUse", {**base, "toolName": "bash",
                                        "toolArgs": json.dumps({"command": "ls", "description": "list"})})
    assert ok.code == 0 and ok.json() == {"permissionDecision": "allow"}
    denied = hook("copilot", "preToolUse", {**base, "toolName": "bash", "toolArgs": json.dumps({"command": FORCE})})
    assert denied.json()["permissionDecision"] == "deny"
    assert "force push" in denied.json()["permissionDecisionReason"]
    asked = hook("copilot", "preToolUse", {**base, "toolName": "bash", "toolArgs": {"command": MERGE}})
    assert asked.json()["permissionDecision"] == "ask"
    create = hook("copilot", "preToolUse", {**base, "toolName": "create", "toolArgs": json.dumps(
        {"path": str(repo / ".github/workflows/new.yml"), "file_text": "on: push"})})
    assert create.json()["permissionDecision"] == "ask"


# -- never crash ---------------------------------------------------------------------


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_name": 5, "tool_input": "x"}'])
def test_unreadable_input_is_refused_never_crashed(repo: Path, policy: Path, hook: Callable[..., Hooked],
                                                   stdin: str) -> None:
    answer = hook("claude", "PreToolUse", stdin, cwd=repo)
    assert "Traceback" not in answer.stderr
    if stdin.startswith("{"):
        assert answer.code == 0  # a readable object with an unknown tool: nothing to judge
    else:
        assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "not a JSON object" in answer.stdout
    cursor = hook("cursor", "beforeShellExecution", stdin, cwd=repo)
    assert cursor.json()["permission"] == ("allow" if stdin.startswith("{") else "deny")


def test_unknown_agent_is_refused(hook: Callable[..., Hooked]) -> None:
    answer = hook("opencode", "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert answer.code == 2 and "unknown agent 'opencode'" in answer.stderr


def test_gitvow_agent_env_names_the_agent(repo: Path, policy: Path, hook: Callable[..., Hooked],
                                          env: dict[str, str]) -> None:
    import subprocess

    from .conftest import gitvow_argv

    done = subprocess.run([*gitvow_argv(), "hook", "beforeShellExecution"], input=json.dumps({"command": FORCE,
                          "cwd": str(repo)}), capture_output=True, text=True, env={**env, "GITVOW_AGENT": "cursor"},
                          check=False)
    assert json.loads(done.stdout)["permission"] == "deny"


def test_observe_tier_allows_and_records_without_the_command(repo: Path, write_policy: Callable[..., Path],
                                                             hook: Callable[..., Hooked], env: dict[str, str]) -> None:
    write_policy(repo, {"bash_confirm": [{"program": "git", "verbs": ["push"], "reason": "pushing to a remote",
                                          "when": "observe"}]})
    secret = "https://user:s3cr3t@git.example.test/team/app.git"
    answer = hook("claude", "PreToolUse", claude("Bash", {"command": f"git push {secret} x"}, repo))
    assert answer == Hooked(0, "", "")
    (line,) = Path(env["GITVOW_HOME"], "observed.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert entry["observed"] == "pushing to a remote" and entry["agent"] == "claude" and entry["tool"] == "Bash"
    assert "s3cr3t" not in line


def test_an_edit_in_another_repository_is_judged_by_that_repositorys_policy(
        repo: Path, tmp_path: Path, write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    write_policy(repo, {"path_confirm": []})
    write_policy(other, {"path_confirm": [{"pattern": "secrets/", "reason": "edits secrets", "when": "immediate"}]})
    payload = claude("Edit", {"file_path": str(other / "secrets" / "k.txt"), "old_string": "a", "new_string": "b"},
                     repo)
    answer = hook("claude", "PreToolUse", payload, cwd=repo)
    assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "edits secrets: secrets/k.txt" in answer.json()["hookSpecificOutput"]["permissionDecisionReason"]
