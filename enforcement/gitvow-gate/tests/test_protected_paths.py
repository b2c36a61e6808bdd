"""``[paths]`` at the gate: edits (and shell lines) that write a protected path, for agents
the policy names, as the hook answers real agent payloads and as ``gitvow check`` does."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Hooked
from .test_agreement import call_payload, check_decision, hook_decision

POLICY = """
[paths.rules]
"deploy/**" = "refuse"

[agents.claude]
mode = "issues_and_prs"

[agents.codex]
mode = "issues_and_prs"

[agents.cursor]
mode = "issues_and_prs"

[agents.gemini]
mode = "issues_and_prs"

[agents.copilot]
mode = "issues_and_prs"
"""

AGENTS = ["claude", "codex", "cursor", "gemini", "copilot"]


@pytest.fixture
def fenced(repo: Path, write_policy: Callable[..., Path]) -> Path:
    write_policy(repo, POLICY, name="policy.toml")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a\n")
    return repo


def edit(hook: Callable[..., Hooked], agent: str, path: str, repo: Path) -> str:
    event, payload = call_payload(agent, "edit", path, repo)
    return hook_decision(agent, hook(agent, event, payload, cwd=repo))


def shell(hook: Callable[..., Hooked], agent: str, line: str, repo: Path) -> str:
    event, payload = call_payload(agent, "shell", line, repo)
    return hook_decision(agent, hook(agent, event, payload, cwd=repo))


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_is_asked_about_a_staged_path_and_refused_a_refused_one(
        fenced: Path, hook: Callable[..., Hooked], agent: str) -> None:
    assert edit(hook, agent, ".github/workflows/ci.yml", fenced) == "confirm"
    assert edit(hook, agent, "deploy/prod.yml", fenced) == "deny"
    assert edit(hook, agent, "src/a.py", fenced) == "allow"


def test_the_reason_names_the_path_and_the_rule(fenced: Path, hook: Callable[..., Hooked]) -> None:
    event, payload = call_payload("claude", "edit", "./src/../deploy/prod.yml", fenced)
    out = hook("claude", event, payload, cwd=fenced).json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "path_protected: deploy/prod.yml is a protected path ([paths] 'deploy/**' = refuse)" \
        in out["permissionDecisionReason"]
    event, payload = call_payload("claude", "edit", str(fenced / "Deploy/Prod.yml"), fenced)
    refused = hook("claude", event, payload, cwd=fenced).json()["hookSpecificOutput"]
    assert refused["permissionDecision"] == "deny" and "path_protected: Deploy/Prod.yml" in refused[
        "permissionDecisionReason"]
    # a path no gate-0.42 rule names: the [paths] default asks, naming the path and the rule
    event, payload = call_payload("claude", "edit", ".gitlab-ci.yml", fenced)
    asked = hook("claude", event, payload, cwd=fenced).json()["hookSpecificOutput"]
    assert asked["permissionDecision"] == "ask"
    assert "path_protected: .gitlab-ci.yml is a protected path ([paths] '.gitlab-ci.yml' = stage)" \
        in asked["permissionDecisionReason"]


@pytest.mark.parametrize("spelling", ["./.github/workflows/ci.yml", "src/../.github/workflows/new.yml",
                                      "{repo}/.github/workflows/ci.yml", "link/ci.yml", "sub/CODEOWNERS"])
def test_spellings_are_canonical(fenced: Path, hook: Callable[..., Hooked], spelling: str) -> None:
    os.symlink(fenced / ".github" / "workflows", fenced / "link")
    assert edit(hook, "claude", spelling.format(repo=fenced), fenced) == "confirm"


def test_a_symlink_to_a_protected_file_is_the_protected_file(fenced: Path, hook: Callable[..., Hooked]) -> None:
    os.symlink(fenced / "deploy.txt", fenced / "innocent.txt")
    (fenced / "deploy").mkdir()
    os.symlink(fenced / "deploy" / "prod.yml", fenced / "notes.md")
    assert edit(hook, "claude", "notes.md", fenced) == "deny"
    assert edit(hook, "claude", "innocent.txt", fenced) == "allow"


def test_codex_apply_patch_names_every_file_deletes_and_moves(fenced: Path, hook: Callable[..., Hooked]) -> None:
    base: dict[str, Any] = {"session_id": "c", "cwd": str(fenced), "hook_event_name": "PreToolUse"}

    def patched(body: str) -> Hooked:
        patch = f"*** Begin Patch\n{body}\n*** End Patch"
        return hook("codex", "PreToolUse", {**base, "tool_name": "apply_patch", "tool_input": {"command": patch}})

    assert patched("*** Update File: src/a.py\n@@\n-a\n+b").code == 0
    deleted = patched("*** Update File: src/a.py\n@@\n-a\n+b\n*** Delete File: .github/workflows/ci.yml")
    assert deleted.code == 2 and "CONFIRMATION REQUIRED" in deleted.stderr and ".github/workflows/ci.yml" in deleted.stderr
    owners = patched("*** Delete File: docs/CODEOWNERS")
    assert owners.code == 2 and "path_protected: docs/CODEOWNERS" in owners.stderr
    moved = patched("*** Update File: src/a.py\n*** Move to: deploy/a.py\n@@\n-a\n+b")
    assert moved.code == 2 and "BLOCKED" in moved.stderr and "deploy/a.py" in moved.stderr
    moved_out = patched("*** Update File: deploy/x.py\n*** Move to: src/x.py\n@@\n-a\n+b")
    assert moved_out.code == 2 and "BLOCKED" in moved_out.stderr


def test_copilot_apply_patch(fenced: Path, hook: Callable[..., Hooked]) -> None:
    patch = "*** Begin Patch\n*** Add File: deploy/new.yml\n+x\n*** End Patch"
    out = hook("copilot", "preToolUse", {"cwd": str(fenced), "toolName": "apply_patch",
                                         "toolArgs": json.dumps({"input": patch})}).json()
    assert out["permissionDecision"] == "deny" and "path_protected" in out["permissionDecisionReason"]


@pytest.mark.parametrize(("line", "expected"), [
    ("rm .github/workflows/ci.yml", "confirm"),
    ("git rm -q .github/workflows/ci.yml", "confirm"),
    ("mv .github/workflows/ci.yml old.yml", "confirm"),
    ("cp /tmp/x.yml .github/workflows/", "confirm"),
    ("cp src/a.py deploy/", "deny"),
    # deploy/** names the directory deploy itself too: a file written in its place removes
    # everything under it (and into an existing deploy/, cp writes deploy/a.py)
    ("cp src/a.py deploy", "deny"),
    ("cp src/a.py deployment", "allow"),
    ("sed -i s/a/b/ .github/workflows/ci.yml", "confirm"),
    ("echo x | tee -a deploy/prod.yml", "deny"),
    ("echo x > .github/workflows/x.yml", "confirm"),
    ("echo x>>deploy/prod.yml", "deny"),
    ("cd .github && rm workflows/ci.yml", "confirm"),
    ("rm -rf .github", "confirm"),
    ("rm .github/workflows/*", "confirm"),
    ("cat > .github/workflows/x.yml <<'EOF'\non: push\nEOF", "confirm"),
    ("bash -c 'rm -f deploy/prod.yml'", "deny"),
    ("sudo git -C . mv src deploy/src", "deny"),
    ("git -C .github -C workflows rm ci.yml", "confirm"),
    ("echo 'a > deploy/x'", "allow"),
    ("cat .github/workflows/ci.yml", "allow"),
    ("cp .github/workflows/ci.yml /tmp/copy.yml", "allow"),
    ("sed -n 1p .github/workflows/ci.yml", "allow"),
    ("rm src/a.py && echo done > /dev/null", "allow"),
])
def test_shell_lines_that_write_protected_paths(fenced: Path, hook: Callable[..., Hooked], line: str,
                                                 expected: str) -> None:
    assert shell(hook, "claude", line, fenced) == expected


def test_without_an_agents_entry_nothing_changes(repo: Path, write_policy: Callable[..., Path],
                                                 hook: Callable[..., Hooked]) -> None:
    write_policy(repo, POLICY.replace("[agents.claude]", "[agents.someone]"), name="policy.toml")
    (repo / "deploy").mkdir()
    assert edit(hook, "claude", "deploy/prod.yml", repo) == "allow"
    assert shell(hook, "claude", "rm deploy/prod.yml", repo) == "allow"


def test_gitvow_check_agrees(fenced: Path, cli: Callable[..., Hooked], hook: Callable[..., Hooked]) -> None:
    for path in (".github/workflows/ci.yml", "deploy/prod.yml", "src/a.py"):
        from_check = check_decision(cli("check", "--agent", "claude", "--path", path, cwd=fenced))
        assert from_check == edit(hook, "claude", path, fenced), path
    for line in ("rm .github/workflows/ci.yml", "echo x > deploy/prod.yml", "ls"):
        from_check = check_decision(cli("check", "--agent", "claude", "--", line, cwd=fenced))
        assert from_check == shell(hook, "claude", line, fenced), line
