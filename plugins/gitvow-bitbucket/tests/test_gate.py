"""The agent gate reads ``curl`` to Bitbucket (there is no ``bb`` CLI): the hook run as Claude
Code runs it, a subprocess with the agent's JSON on stdin, installed together with gitvow-gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gitvow_gate", reason="the agent gate (gitvow-gate) is not installed")

GITVOW = str(Path(sys.executable).with_name("gitvow"))
API = "https://api.bitbucket.org/2.0/repositories"


def hook(tmp_path: Path, command: str, mode: str) -> dict[str, object]:
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[agents.claude]\nmode = "{mode}"\n', encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "GITVOW_POLICY": str(policy),
           "GITVOW_CACHE_DIR": str(tmp_path / "cache"), "GITVOW_GATE_SERVER": "off"}  # no server left behind
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
               "cwd": str(tmp_path)}
    done = subprocess.run([GITVOW, "hook", "--agent", "claude", "PreToolUse"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


@pytest.mark.parametrize("owner", ["team", "te%61m"])
def test_a_curl_merge_is_refused_at_the_gate_under_its_real_name(tmp_path: Path, owner: str) -> None:
    answer = hook(tmp_path, f"curl -X POST {API}/{owner}/app/pullrequests/1/merge", "issues_and_prs")
    decision = answer["hookSpecificOutput"]
    assert isinstance(decision, dict) and decision["permissionDecision"] == "deny"
    reason = str(decision["permissionDecisionReason"])
    assert "pr.merge on team/app" in reason and reason.endswith("reason=hard_deny")


def test_a_curl_decline_at_advisory_is_refused_and_a_read_is_not(tmp_path: Path) -> None:
    refused = hook(tmp_path, f"curl --json '{{}}' {API}/team/app/pullrequests/1/decline", "advisory")
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny"  # type: ignore[index]
    assert "mode_denied" in refused["hookSpecificOutput"]["permissionDecisionReason"]  # type: ignore[index]
    assert hook(tmp_path, f"curl -s {API}/team/app/pullrequests", "advisory").get("hookSpecificOutput") is None
