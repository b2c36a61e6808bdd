"""``gitvow check`` and the installed hook give one answer: the whole corpus through both.

Both resolve the agent (``$GITVOW_AGENT``, else the agent the hook is for), the policy file
(from the working directory, or the edited file's repository) and the forge stage through
:func:`gitvow_gate.invocation.judge`; this test holds them to it, as processes, the way an agent
and an operator run them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Hooked
from .corpus import CORPUS, POLICY


def shell_payload(agent: str, command: str, repo: Path) -> tuple[str, dict[str, Any]]:
    return call_payload(agent, "shell", command, repo)


def call_payload(agent: str, kind: str, what: str, repo: Path) -> tuple[str, dict[str, Any]]:
    """The hook event and payload with which ``agent`` announces the call."""
    cwd = str(repo)
    if kind == "shell":
        return {
            "claude": ("PreToolUse", {"cwd": cwd, "permission_mode": "default", "tool_name": "Bash",
                                      "tool_input": {"command": what}}),
            "codex": ("PreToolUse", {"cwd": cwd, "tool_name": "Bash", "tool_input": {"command": what}}),
            "cursor": ("beforeShellExecution", {"cwd": cwd, "command": what}),
            "gemini": ("BeforeTool", {"cwd": cwd, "tool_name": "run_shell_command", "tool_input": {"command": what}}),
            "copilot": ("preToolUse", {"cwd": cwd, "toolName": "bash", "toolArgs": json.dumps({"command": what})}),
        }[agent]
    if kind == "edit":
        edit = {"file_path": what, "old_string": "a", "new_string": "b"}
        return {
            "claude": ("PreToolUse", {"cwd": cwd, "permission_mode": "default", "tool_name": "Edit", "tool_input": edit}),
            "codex": ("PreToolUse", {"cwd": cwd, "tool_name": "Edit", "tool_input": edit}),
            "cursor": ("preToolUse", {"cwd": cwd, "tool_name": "Edit", "tool_input": edit}),
            "gemini": ("BeforeTool", {"cwd": cwd, "tool_name": "replace", "tool_input": edit}),
            "copilot": ("preToolUse", {"cwd": cwd, "toolName": "edit",
                                       "toolArgs": json.dumps({"path": what, "old_str": "a", "new_str": "b"})}),
        }[agent]
    return {
        "claude": ("PreToolUse", {"cwd": cwd, "permission_mode": "default", "tool_name": what, "tool_input": {}}),
        "codex": ("PreToolUse", {"cwd": cwd, "tool_name": what, "tool_input": {}}),
        "cursor": ("preToolUse", {"cwd": cwd, "tool_name": what, "tool_input": {}}),
        "gemini": ("BeforeTool", {"cwd": cwd, "tool_name": what, "tool_input": {}}),
        "copilot": ("preToolUse", {"cwd": cwd, "toolName": what, "toolArgs": "{}"}),
    }[agent]


def _confirm_or_deny(message: str) -> str:
    return "confirm" if "CONFIRMATION REQUIRED" in message else "deny"


def hook_decision(agent: str, answer: Hooked) -> str:
    """allow, confirm or deny, read from the agent's own answer format."""
    if agent == "claude":
        if answer.code == 2:
            return "confirm"
        if not answer.stdout:
            return "allow"
        return {"deny": "deny", "ask": "confirm"}[answer.json()["hookSpecificOutput"]["permissionDecision"]]
    if agent == "codex":
        return "allow" if answer.code == 0 else _confirm_or_deny(answer.stderr)
    if agent == "cursor":
        return {"allow": "allow", "ask": "confirm", "deny": "deny"}[answer.json()["permission"]]
    if agent == "gemini":
        out = answer.json()
        return "allow" if out["decision"] == "allow" else _confirm_or_deny(out["reason"])
    return {"allow": "allow", "ask": "confirm", "deny": "deny"}[answer.json()["permissionDecision"]]


def check_decision(answer: Hooked) -> str:
    first = answer.stdout.splitlines()[0] if answer.stdout else ""
    return first.split(":", 1)[0].strip().lower()


def check_args(kind: str, what: str) -> list[str]:
    if kind == "shell":
        return ["--", what]
    return ["--path", what] if kind == "edit" else ["--mcp", what]


@pytest.fixture
def corpus_repo(repo: Path, write_policy: Callable[..., Path]) -> Path:
    write_policy(repo, POLICY, name="policy.toml")
    return repo


def test_check_and_hook_agree_on_the_whole_corpus(corpus_repo: Path, hook: Callable[..., Hooked],
                                                 cli: Callable[..., Hooked]) -> None:
    got = []
    for kind, what, expected in CORPUS:
        event, payload = call_payload("claude", kind, what, corpus_repo)
        from_hook = hook_decision("claude", hook("claude", event, payload, cwd=corpus_repo))
        from_check = check_decision(cli("check", *check_args(kind, what), cwd=corpus_repo))
        got.append((kind, what, from_hook, from_check))
        assert from_hook == from_check == expected, (kind, what, from_hook, from_check, expected)
    assert len(got) == len(CORPUS)


@pytest.mark.parametrize("agent", ["codex", "cursor", "gemini", "copilot"])
def test_under_a_proxy_identity_both_judge_as_that_identity(corpus_repo: Path, hook: Callable[..., Hooked],
                                                            cli: Callable[..., Hooked], agent: str) -> None:
    # `gitvow env --agent bot` exports GITVOW_AGENT=bot into the agent's environment, and its
    # hooks inherit it: bot is at issues_and_prs, so its push is allowed where claude's is not
    identity = {"GITVOW_AGENT": "bot"}
    sample = [item for i, item in enumerate(CORPUS) if i % 3 == 0 or item[1] == "git push origin feature"]
    for kind, what, _ in sample:
        event, payload = call_payload(agent, kind, what, corpus_repo)
        from_hook = hook_decision(agent, hook(agent, event, payload, cwd=corpus_repo, extra_env=identity))
        from_check = check_decision(cli("check", "--hook", agent, *check_args(kind, what), cwd=corpus_repo,
                                        extra_env=identity))
        assert from_hook == from_check, (agent, kind, what, from_hook, from_check)
        if what == "git push origin feature":
            assert from_hook == "allow"


#: Commands given to ``gitvow check`` as argv (each word one argument, as a shell passes them),
#: with the decision the hook gives the same command.
ARGV_CORPUS: list[tuple[list[str], str]] = [
    (["bash", "-c", "gh pr merge 3"], "deny"),
    (["sh", "-c", "cd sub && gh pr merge 3"], "deny"),
    (["env", "-S", "gh pr merge 3"], "deny"),
    (["find", ".", "-exec", "gh", "pr", "merge", "3", ";"], "deny"),
    (["bash", "-c", "bash <<< 'gh pr merge 3'"], "deny"),
    (["trap", "gh pr merge 3", "EXIT"], "deny"),
    (["ssh", "host", "gh pr merge 3"], "deny"),
    (["git", "-c", "alias.m=!gh pr merge 3", "m"], "deny"),
    (["echo", "$'\\x67h' pr merge 3"], "allow"),
    (["gh", "pr", "merge", "3"], "deny"),
    (["echo", "gh pr merge 3; rm -rf /"], "allow"),
    (["git", "commit", "-m", "never gh pr merge 3"], "allow"),
    (["ls", "-la"], "allow"),
]


@pytest.mark.parametrize(("argv", "expected"), ARGV_CORPUS, ids=[" ".join(a) for a, _ in ARGV_CORPUS])
def test_check_takes_its_words_as_argv(corpus_repo: Path, hook: Callable[..., Hooked], cli: Callable[..., Hooked],
                                      argv: list[str], expected: str) -> None:
    import shlex

    line = shlex.join(argv)  # what a shell would have run for these words
    event, payload = call_payload("claude", "shell", line, corpus_repo)
    from_hook = hook_decision("claude", hook("claude", event, payload, cwd=corpus_repo))
    from_check = check_decision(cli("check", "--", *argv, cwd=corpus_repo))
    assert from_hook == from_check == expected, (argv, from_hook, from_check)
