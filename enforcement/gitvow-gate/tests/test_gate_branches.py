"""A pull request's head and the branches MCP tools write, judged at the gate by ``[branches]``
as the proxy judges the requests they send (the hook as a subprocess, real agent payloads)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitvow.plugins import installed

from .conftest import Hooked

POLICY = """
[agents.claude]
mode = "issues_and_prs"
branches = ["agent/**"]

[operations."contents.write"]
min_mode = "issues_and_prs"
"""

github = pytest.mark.skipif("github" not in installed().adapters, reason="gitvow-github is not installed here")


def claude(tool: str, tool_input: dict[str, Any], repo: Path) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(repo), "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": tool_input}


#: Behind the proxy (as ``gitvow env`` sets it): a ``pr.create`` the proxy stages goes on at the gate.
PROXIED = {"GITVOW_AGENT": "claude", "HTTPS_PROXY": "http://127.0.0.1:9"}


def answer(hook: Callable[..., Hooked], repo: Path, tool: str, tool_input: dict[str, Any]) -> tuple[str, str]:
    done = hook("claude", "PreToolUse", claude(tool, tool_input, repo), cwd=repo, extra_env=PROXIED)
    if not done.stdout:
        return ("allow" if done.code == 0 else "confirm", done.stderr)
    out = done.json()["hookSpecificOutput"]
    return out["permissionDecision"], out.get("permissionDecisionReason", "")


@github
@pytest.mark.parametrize(("line", "refused"), [
    ("gh pr create -R team/app --title t --body b --head x", True),
    ("gh pr create -R team/app --title t --body b -H main", True),
    ("gh pr create -R team/app --title t --body b --head=team:release/1", True),
    ("gh pr create -R team/app --title t --body b --head agent/x --head main", True),  # gh keeps the last
    ("gh pr create -R team/app --title t --body b --head agent/x", False),
    ("gh pr create -R team/app --title t --body b -H team:agent/x", False),
])
def test_gh_pr_create_head(repo: Path, write_policy: Callable[..., Path], hook: Callable[..., Hooked],
                           line: str, refused: bool) -> None:
    write_policy(repo, POLICY, name="policy.toml")
    decision, reason = answer(hook, repo, "Bash", {"command": line})
    if refused:
        assert decision == "deny" and reason.endswith("reason=branch_not_allowed"), reason
    else:
        assert decision == "allow", reason


@github
@pytest.mark.parametrize(("tool", "arguments", "refused"), [
    ("mcp__github__create_branch", {"owner": "team", "repo": "app", "branch": "b"}, True),
    ("mcp__github__create_branch", {"owner": "team", "repo": "app", "branch": "agent/b"}, False),
    ("mcp__github__create_pull_request", {"owner": "team", "repo": "app", "title": "t", "head": "x", "base": "main"},
     True),
    ("mcp__github__push_files", {"owner": "team", "repo": "app", "branch": "main", "message": "m",
                                 "files": [{"path": "a", "content": "x"}]}, True),
    ("mcp__github__create_or_update_file", {"owner": "team", "repo": "app", "branch": "agent/b", "path": "a",
                                            "content": "x", "message": "m"}, False),
])
def test_github_mcp_branches(repo: Path, write_policy: Callable[..., Path], hook: Callable[..., Hooked], tool: str,
                             arguments: dict[str, Any], refused: bool) -> None:
    write_policy(repo, POLICY, name="policy.toml")
    decision, reason = answer(hook, repo, tool, arguments)
    if refused:
        assert decision == "deny" and reason.endswith("reason=branch_not_allowed"), reason
    else:
        assert decision == "allow", reason


@github
def test_a_staged_path_through_mcp_is_the_proxys_to_stage(repo: Path, write_policy: Callable[..., Path],
                                                         hook: Callable[..., Hooked]) -> None:
    write_policy(repo, POLICY, name="policy.toml")
    arguments = {"owner": "team", "repo": "app", "branch": "agent/b", "path": ".github/workflows/ci.yml",
                 "content": "x", "message": "m"}
    away = hook("claude", "PreToolUse", claude("mcp__github__create_or_update_file", arguments, repo), cwd=repo)
    out = away.json()["hookSpecificOutput"]  # away from a proxy: refused, naming the approval path
    assert out["permissionDecision"] == "deny" and "path_protected" in out["permissionDecisionReason"]
    assert answer(hook, repo, "mcp__github__create_or_update_file", arguments) == ("allow", "")  # the proxy stages it
