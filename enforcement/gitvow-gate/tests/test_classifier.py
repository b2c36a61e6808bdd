"""The optional classifier: ALLOW, CONFIRM or DENY out; anything else is confirm, never allow."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from gitvow_gate.call import GateCall
from gitvow_gate.decide import decide
from gitvow_gate.gate_policy import Classifier, GatePolicy

from .conftest import Hooked

CLASSIFIER = """
import json, os, sys
call = json.load(sys.stdin)
with open(os.environ["SEEN"], "w") as fh:
    json.dump(call, fh)
print(os.environ["SAY"], end="")
"""


def run(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str], write_policy: Callable[..., Path],
        hook: Callable[..., Hooked], say: str, body: str = CLASSIFIER) -> Hooked:
    write_policy(repo, {"llm_classifier": {"enabled": True, "command": scripts("clf", body), "timeout": 2,
                                           "_doc": "a comment, as 0.42 files carry"}})
    payload = {"cwd": str(repo), "permission_mode": "default", "tool_name": "Bash",
               "tool_input": {"command": "terraform plan"}}
    return hook("claude", "PreToolUse", payload, cwd=repo,
                extra_env={"SAY": say, "SEEN": str(tmp_path / "seen.json")})


@pytest.mark.parametrize(
    ("say", "decision", "reason"),
    [
        ("DENY touches production state\n", "deny", "classifier: touches production state"),
        ("CONFIRM unusual\n", "ask", "classifier: unusual"),
        ("", "ask", "classifier gave no ALLOW, CONFIRM or DENY answer"),
        ("maybe?\n", "ask", "classifier gave no ALLOW, CONFIRM or DENY answer"),
    ],
)
def test_classifier_answers(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                            write_policy: Callable[..., Path], hook: Callable[..., Hooked],
                            say: str, decision: str, reason: str) -> None:
    answer = run(repo, tmp_path, scripts, write_policy, hook, say)
    out = answer.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == decision and reason in out["permissionDecisionReason"]
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["tool_name"] == "Bash" and seen["tool_input"] == {"command": "terraform plan"}
    assert seen["agent"] == "claude" and seen["cwd"] == str(repo)


def test_classifier_allow(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                          write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    assert run(repo, tmp_path, scripts, write_policy, hook, "ALLOW plan is read-only\n") == Hooked(0, "", "")


@pytest.mark.parametrize(("body", "expected"), [
    ("import sys; sys.exit(1)", "classifier unavailable (exit status 1)"),
    ("import time; time.sleep(30)", "classifier unavailable (no answer within 1s)"),
    ("import sys; sys.stdout.buffer.write(b'\\xff\\xfe')", "not text"),
])
def test_a_failing_classifier_is_confirm(repo: Path, scripts: Callable[[str, str], str], body: str,
                                         expected: str) -> None:
    policy = GatePolicy(source="test", classifier=Classifier(tuple(shlex.split(scripts("clf", body))), 1))
    decision = decide(policy, GateCall.shell("terraform plan", str(repo)), "claude")
    assert decision.outcome == "confirm" and expected in decision.reason
