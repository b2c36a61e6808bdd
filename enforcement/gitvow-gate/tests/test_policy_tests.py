"""``[[tests]]`` tool calls in a policy file, judged by the gate exactly as its hook would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Hooked = Any

POLICY = """
[[bash_confirm]]
program = "make"
verbs = ["release"]
reason = "a release"

[agents.claude]
mode = "issues_only"

[[tests]]
name = "plain commands run"
agent = "claude"
command = "ls -la"
expect = "allow"

[[tests]]
name = "merges wait for a human"
agent = "claude"
command = "gh pr merge 3 --repo team/app"
expect = "relay"
reason = "hard_deny"

[[tests]]
name = "comments are fine at issues_only"
agent = "claude"
command = "gh issue comment 4 --repo team/app --body 'hi'"
expect = "allow"

[[tests]]
name = "a release needs a yes"
agent = "claude"
command = "make release"
expect = "confirm"

[[tests]]
name = "a merge through sh -c is still a merge"
agent = "claude"
command = "sh -c 'gh pr merge 3 --repo team/app'"
expect = "deny"
"""


def _check(cli: Callable[..., Hooked], repo: Path, text: str) -> Hooked:
    path = repo / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return cli("policy", "check", str(path), cwd=repo)


def test_tool_call_tests_pass_as_the_hook_decides(cli: Callable[..., Hooked], repo: Path) -> None:
    result = _check(cli, repo, POLICY)
    assert result.code == 0, result.stderr
    assert "5 tests passed" in result.stdout


def test_the_hook_agrees_with_what_the_tests_claim(hook: Callable[..., Hooked], repo: Path,
                                                   write_policy: Callable[..., Path]) -> None:
    write_policy(repo, POLICY, name="policy.toml")
    merge = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(repo), "session_id": "s",
             "tool_input": {"command": "gh pr merge 3 --repo team/app"}}
    answer = hook("claude", "PreToolUse", merge, cwd=repo)
    assert "reason=hard_deny" in json.dumps(answer.json())


def test_a_failing_tool_test_names_itself(cli: Callable[..., Hooked], repo: Path) -> None:
    text = POLICY.replace('command = "ls -la"\nexpect = "allow"\n', 'command = "ls -la"\nexpect = "deny"\n', 1)
    result = _check(cli, repo, text)
    assert result.code == 1
    assert "tests[0] (plain commands run): expected deny, got allow" in result.stderr
