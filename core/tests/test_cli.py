"""``gitvow`` as a user runs it: a subprocess per call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitvow.modes import MODE_NAMES

Run = Callable[..., Any]


def test_ops_json_lists_the_vocabulary_with_default_rows(gitvow_cli: Run) -> None:
    result = gitvow_cli(["ops", "--json"])
    assert result.returncode == 0
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["pr.merge"]["default"] == "relay(approval)"
    assert rows["issue.comment"]["default"] == "issues_only or converse"
    assert "inference" in rows["inference.call"]["adapters"]


def test_policy_check_and_schema(gitvow_cli: Run, tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[operations."pr.merge"]\nmin_mode = "issues_prs_merge"\n')
    bad = tmp_path / "bad.toml"
    bad.write_text('[operations."pr.mrge"]\ndeny = true\n')
    assert gitvow_cli(["policy", "check", str(good)]).returncode == 0
    result = gitvow_cli(["policy", "check", str(bad)])
    assert result.returncode == 1
    assert result.stderr.strip() == f"gitvow: error: {bad}: operations.'pr.mrge': unknown operation 'pr.mrge'; expected one of the vocabulary (`gitvow ops`)"
    schema = json.loads(gitvow_cli(["policy", "schema"]).stdout)
    assert schema["additionalProperties"] is False and "operations" in schema["properties"]


def test_policy_check_rejects_a_host_mapped_to_a_missing_adapter(gitvow_cli: Run, tmp_path: Path) -> None:
    policy = tmp_path / "p.json"
    policy.write_text('{"hosts": {"git.example.test": "gitsmrat"}}')
    result = gitvow_cli(["policy", "check", str(policy)])
    assert result.returncode == 1 and "hosts.'git.example.test'" in result.stderr and "gitsmrat" in result.stderr


def test_explain_inference_is_allowed_at_every_mode(gitvow_cli: Run) -> None:
    url = "https://api.githubcopilot.com/chat/completions"
    stdin = "".join(json.dumps({"method": "POST", "url": url, "mode": m}) + "\n" for m in MODE_NAMES)
    answers = [json.loads(line) for line in gitvow_cli(["explain", "--jsonl"], stdin=stdin).stdout.splitlines()]
    assert [(a["verdict"], a["operations"], a["adapter"]) for a in answers] == [("allow", ["inference.call"], "inference")] * 4


def test_explain_jsonl_keeps_order_and_survives_bad_lines(gitvow_cli: Run) -> None:
    stdin = "\n".join([
        json.dumps({"method": "GET", "url": "https://elsewhere.example/"}),
        "{not json",
        json.dumps({"method": "POST"}),
        json.dumps({"method": "DELETE", "url": "https://api.githubcopilot.com/chat/completions", "mode": "issues_prs_merge"}),
    ]) + "\n"
    answers = [json.loads(line) for line in gitvow_cli(["explain", "--jsonl"], stdin=stdin).stdout.splitlines()]
    assert answers[0]["verdict"] == "tunnel" and answers[0]["adapter"] is None
    assert "not JSON" in answers[1]["error"]
    assert "method" in answers[2]["error"]
    assert answers[3]["verdict"] == "deny" and answers[3]["operations"] == ["unknown"] and answers[3]["reason"] == "mode_denied"


def test_explain_human_output_and_agent_from_policy(gitvow_cli: Run, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[operations."inference.call"]\nmin_mode = "issues_only"\n[agents.bot]\nmode = "issues_and_prs"\n')
    url = "https://api.githubcopilot.com/chat/completions"
    result = gitvow_cli(["explain", "--policy", str(policy), "--agent", "bot", "POST", url, "--data", "{}"])
    assert result.returncode == 0
    assert "verdict:    allow" in result.stdout and "operations: inference.call" in result.stdout
    low = gitvow_cli(["explain", "--policy", str(policy), "POST", url])
    assert "verdict:    deny" in low.stdout and "reason=mode_denied" in low.stdout
    missing = gitvow_cli(["explain", "--policy", str(policy), "--agent", "nobody", "GET", url])
    assert missing.returncode == 1 and "agent 'nobody' is not in the policy" in missing.stderr
