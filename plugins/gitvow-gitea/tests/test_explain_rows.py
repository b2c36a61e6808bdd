"""The default table's rows (docs/policy.md) on a self-hosted Gitea through ``gitvow explain``, at every mode.

Runs the installed ``gitvow`` command as a user would, with the instance mapped in ``[hosts]``
and served under a sub-path, so host mapping, adapter options, classification and the denial
line are exercised together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gitvow.modes import MODE_NAMES
from gitvow_gitsmart.adapter import push_body

BASE = "https://forge.example.test/gitea"
API = f"{BASE}/api/v1/repos/team/app"
ROWS = [
    ("GET", f"{API}/pulls/7", "", ["read"], "advisory"),
    ("POST", f"{API}/issues", "{}", ["issue.create"], "issues_only"),
    ("POST", f"{API}/issues/3/comments", "{}", ["issue.comment"], "issues_only or converse"),
    ("POST", f"{API}/issues/3/labels", "{}", ["label.add"], "issues_only"),
    ("POST", f"{API}/pulls/7/reviews", "{}", ["pr.review"], "issues_and_prs or converse"),
    ("POST", f"{API}/pulls/7/update", "", ["pr.update_branch"], "issues_prs_merge"),
    ("POST", f"{API}/pulls", "{}", ["pr.create"], "relay"),
    ("POST", f"{API}/pulls/7/merge", "{}", ["pr.merge"], "relay"),
    ("POST", f"{API}/labels", "{}", ["label.manage"], "deny"),
    ("POST", f"{BASE}/team/app.git/git-receive-pack", push_body(("a" * 40, "b" * 40, "refs/heads/main")),
     ["git.push"], "issues_and_prs"),
]


def expected(rule: str, mode: str, converse: bool) -> str:
    if rule in ("relay", "deny"):
        return rule
    needs, _, capability = rule.partition(" or ")
    allowed = MODE_NAMES.index(mode) >= MODE_NAMES.index(needs) or (capability == "converse" and converse)
    return "allow" if allowed else "deny"


GRANTS = [(mode, converse) for mode in MODE_NAMES for converse in (False, True)]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Every row at every grant, through one ``gitvow explain --jsonl`` process."""
    policy = tmp_path_factory.mktemp("gitea") / "policy.toml"
    policy.write_text('[hosts]\n"forge.example.test" = "gitea"\n\n[adapters.gitea]\nprefix = "/gitea"\n')
    stdin = "".join(
        json.dumps({"method": method, "url": url, **_body(body), "mode": mode, "capabilities": ["converse"] if converse else []})
        + "\n"
        for method, url, body, _, _ in ROWS
        for mode, converse in GRANTS
    )
    result = subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", "explain", "--policy", str(policy), "--jsonl"],
        input=stdin, capture_output=True, text=True, env=dict(os.environ), timeout=60, check=True,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == len(ROWS) * len(GRANTS)
    return lines


@pytest.mark.parametrize("row", range(len(ROWS)), ids=[f"{r[0]} {r[1][len(BASE):]}" for r in ROWS])
def test_explain_at_every_mode(answers: list[dict[str, Any]], row: int) -> None:
    _, _, _, ops, rule = ROWS[row]
    mine = answers[row * len(GRANTS) : (row + 1) * len(GRANTS)]
    for (mode, converse), answer in zip(GRANTS, mine, strict=True):
        where = f"{mode}{' +converse' if converse else ''}: {answer}"
        assert (answer["adapter"], answer["operations"], answer["repo"]) == ("gitea", ops, "team/app"), where
        assert answer["verdict"] == expected(rule, mode, converse), where
        if answer["verdict"] != "allow":
            assert answer["message"].endswith(f"reason={answer['reason']}") and "\n" not in answer["message"], where
        if rule == "relay":
            assert answer["reason"] == "hard_deny" and "needs a human's approval" in answer["message"], where


def _body(body: str | bytes) -> dict[str, str]:
    """A JSON line's body: text as ``body``, a binary push (with its pack) as ``body_base64``."""
    import base64

    return {"body_base64": base64.b64encode(body).decode()} if isinstance(body, bytes) else {"body": body}
