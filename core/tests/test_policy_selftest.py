"""``[[tests]]`` in a policy file: examples checked wherever the policy is loaded to be enforced."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitvow.errors import PolicyError
from gitvow.plugins import installed
from gitvow.policy.load import load_policy
from gitvow.policy.selftest import PolicyTest, failures, meets

Cli = Callable[..., subprocess.CompletedProcess[str]]
INFERENCE = "https://api.githubcopilot.com/chat/completions"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


PASSING = f"""
[agents.bot]
mode = "issues_only"

[[tests]]
name = "the model is reachable"
agent = "bot"
method = "POST"
url = "{INFERENCE}"
expect = "allow"

[[tests]]
name = "an unknown host path is refused"
method = "DELETE"
url = "https://api.githubcopilot.com/some/admin/thing"
expect = "deny"
reason = "mode_denied"
"""


def test_passing_tests_load_and_check_ok(tmp_path: Path, gitvow_cli: Cli) -> None:
    path = _write(tmp_path, PASSING)
    plugins = installed()
    policy = load_policy(path, relays=plugins.relays, sections=plugins.sections, adapters=plugins.adapters)
    assert failures(policy, plugins) == []
    result = gitvow_cli(["policy", "check", str(path)])
    assert result.returncode == 0, result.stderr
    assert "2 tests passed" in result.stdout


def test_a_failing_test_is_named_with_what_it_got(tmp_path: Path, gitvow_cli: Cli) -> None:
    path = _write(tmp_path, PASSING + '\n[operations]\n"inference.call" = { deny = true }\n')
    result = gitvow_cli(["policy", "check", str(path)])
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line
    assert str(path) in line
    assert "tests[0] (the model is reachable): expected allow, got deny reason=" in line


def test_expected_reason_must_match(tmp_path: Path, gitvow_cli: Cli) -> None:
    path = _write(tmp_path, PASSING.replace('reason = "mode_denied"', 'reason = "hard_deny"'))
    result = gitvow_cli(["policy", "check", str(path)])
    assert result.returncode == 1
    assert "tests[1] (an unknown host path is refused): expected deny reason=hard_deny, got deny reason=mode_denied" \
        in result.stderr


def test_an_unknown_agent_or_a_malformed_test_is_a_load_error(tmp_path: Path, gitvow_cli: Cli) -> None:
    result = gitvow_cli(["policy", "check", str(_write(tmp_path, PASSING.replace('agent = "bot"', 'agent = "bott"')))])
    assert result.returncode == 1 and "tests[0] (the model is reachable).agent: 'bott' is not in [agents]" in result.stderr
    broken = '[[tests]]\nmethod = "GET"\ncommand = "ls"\nexpect = "allow"\n'
    result = gitvow_cli(["policy", "check", str(_write(tmp_path, broken))])
    assert result.returncode == 1 and "tests.0: Value error, expected exactly one of" in result.stderr
    typo = '[[tests]]\nmethod = "GET"\nurl = "https://x.example/"\nexpekt = "allow"\n'
    result = gitvow_cli(["policy", "check", str(_write(tmp_path, typo))])
    assert result.returncode == 1 and "tests.0.expekt: unknown key (typo?)" in result.stderr


@pytest.mark.parametrize(("expect", "verdict", "ok"), [
    ("deny", "relay", True), ("deny", "deny", True), ("relay", "deny", False), ("allow", "relay", False),
    ("confirm", "confirm", True), ("confirm", "allow", False),
])
def test_meets(expect: str, verdict: str, ok: bool) -> None:
    test = PolicyTest.model_validate({"command": "gh pr merge 1", "expect": expect})
    assert meets(test, verdict, None) is ok


def test_a_request_cannot_expect_confirm() -> None:
    with pytest.raises(ValueError, match="only the agent gate asks to confirm"):
        PolicyTest.model_validate({"method": "GET", "url": INFERENCE, "expect": "confirm"})


def test_load_policy_runs_no_test_by_itself(tmp_path: Path) -> None:
    """Loading validates shape; running the examples is the enforcing caller's step (check, start, reload)."""
    path = _write(tmp_path, PASSING + '\n[operations]\n"inference.call" = { deny = true }\n')
    plugins = installed()
    policy = load_policy(path, relays=plugins.relays, sections=plugins.sections, adapters=plugins.adapters)
    assert failures(policy, plugins)
    with pytest.raises(PolicyError):
        raise PolicyError("; ".join(failures(policy, plugins)), source=str(path))
