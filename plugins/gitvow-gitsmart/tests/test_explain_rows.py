"""The default table's git rows (docs/policy.md) through ``gitvow explain``, at every mode."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitvow.modes import MODE_NAMES
from gitvow_gitsmart.adapter import push_body

BASE = "https://git.example.test/team/app.git"
ROWS = [
    ("GET", f"{BASE}/info/refs?service=git-upload-pack", b"", ["git.fetch"], "advisory"),
    ("POST", f"{BASE}/git-upload-pack", b"0000", ["git.fetch"], "advisory"),
    ("GET", f"{BASE}/info/refs?service=git-receive-pack", b"", ["git.push"], "issues_and_prs"),
    ("POST", f"{BASE}/git-receive-pack", push_body(("a" * 40, "b" * 40, "refs/heads/main")), ["git.push"], "issues_and_prs"),
]


@pytest.mark.parametrize(("method", "url", "body", "ops", "needs"), ROWS)
def test_explain_gives_the_default_verdict_at_every_mode(
    tmp_path: Path, method: str, url: str, body: bytes, ops: list[str], needs: str
) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[hosts]\n"git.example.test" = "gitsmart"\n')
    stdin = "".join(
        json.dumps({"method": method, "url": url, "mode": mode, "body_base64": base64.b64encode(body).decode()}) + "\n" for mode in MODE_NAMES
    )
    result = subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", "explain", "--policy", str(policy), "--jsonl"],
        input=stdin, capture_output=True, text=True, env=dict(os.environ), timeout=60, check=True,
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(MODE_NAMES)
    for mode, answer in zip(MODE_NAMES, answers, strict=True):
        assert (answer["adapter"], answer["operations"], answer["repo"]) == ("gitsmart", ops, "team/app")
        allowed = MODE_NAMES.index(mode) >= MODE_NAMES.index(needs)
        assert answer["verdict"] == ("allow" if allowed else "deny"), (mode, answer)
        assert answer["reason"] == (None if allowed else "mode_denied")
        if not allowed:
            assert answer["message"].endswith("reason=mode_denied") and "\n" not in answer["message"]
