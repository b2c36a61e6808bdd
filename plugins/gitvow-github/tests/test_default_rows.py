"""The default table's GitHub rows (docs/policy.md): the operation, the repository and the verdict at every mode.

In-process through the pipeline for every mode with and without ``converse``, and once
through ``gitvow explain --jsonl`` as a subprocess, as an operator would check them.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import CONVERSE, MODE_NAMES, Mode
from gitvow.pipeline import Action, Engine
from gitvow.request import Request
from gitvow_github.fixtures import gql, mutation
from gitvow_gitsmart.adapter import push_body

API = "https://api.github.com"
R = f"{API}/repos/octo/app"
GIT = "https://github.com/octo/app.git"
G = f"{API}/graphql"
PUSH = push_body(("a" * 40, "b" * 40, "refs/heads/main"))

# (method, url, body, operation, repo, rule): rule is a minimum mode, "mode+converse", or "relay:<command>".
ROWS: list[tuple[str, str, bytes, str, str | None, str]] = [
    ("GET", f"{R}/pulls", b"", "read", "octo/app", "advisory"),
    ("POST", G, gql('query { repository(owner: "octo", name: "app") { id } }'), "read", "octo/app", "advisory"),
    ("POST", "https://github.com/login/device/code", b"client_id=x", "auth.login", None, "advisory"),
    ("POST", "https://github.com/login/oauth/access_token", b"client_id=x", "auth.login", None, "advisory"),
    ("POST", f"{GIT}/git-upload-pack", b"0000", "git.fetch", "octo/app", "advisory"),
    ("POST", f"{GIT}/git-receive-pack", PUSH, "git.push", "octo/app", "issues_and_prs"),
    ("GET", f"{GIT}/info/refs?service=git-receive-pack", b"", "git.push", "octo/app", "issues_and_prs"),
    ("POST", f"{R}/git/refs", b'{"ref": "refs/heads/topic", "sha": "' + b"a" * 40 + b'"}', "ref.write", "octo/app",
     "issues_and_prs"),
    ("POST", f"{R}/git/commits", b"{}", "ref.write", "octo/app", "issues_and_prs"),
    ("PATCH", f"{R}/git/refs/heads/topic", b'{"sha": "' + b"a" * 40 + b'"}', "ref.write", "octo/app",
     "issues_and_prs"),
    ("POST", G, mutation("createCommitOnBranch", '{branch: {repositoryNameWithOwner: "octo/app", branchName: "topic"}, '
                         'expectedHeadOid: "' + "a" * 40 + '", message: {headline: "h"}, fileChanges: {}}'),
     "ref.write", "octo/app", "issues_and_prs"),
    ("POST", G, mutation("createRef", '{repositoryId: "R_1", name: "refs/heads/topic", oid: "' + "a" * 40 + '"}'),
     "ref.write", None, "issues_and_prs"),
    ("POST", G, mutation("createBranchProtectionRule"), "branch.protect", None, "issues_and_prs"),
    ("POST", G, mutation("updateBranchProtectionRule"), "branch.protect", None, "issues_and_prs"),
    ("POST", f"{R}/issues", b"{}", "issue.create", "octo/app", "issues_only"),
    ("PATCH", f"{R}/issues/4", b"{}", "issue.edit", "octo/app", "issues_only"),
    ("POST", f"{R}/issues/4/comments", b"{}", "issue.comment", "octo/app", "issues_only+converse"),
    ("POST", G, mutation("addComment"), "issue.comment", None, "issues_only+converse"),
    ("POST", f"{R}/issues/4/labels", b"{}", "label.add", "octo/app", "issues_only"),
    ("POST", f"{R}/issues/4/sub_issues", b"{}", "issue.relate", "octo/app", "issues_only"),
    ("POST", f"{R}/issues/4/dependencies/blocked_by", b"{}", "issue.relate", "octo/app", "issues_only"),
    ("POST", f"{R}/pulls", b"{}", "pr.create", "octo/app", "relay:approval"),
    ("POST", G, mutation("createPullRequest"), "pr.create", None, "relay:approval"),
    ("PATCH", f"{R}/pulls/9", b"{}", "pr.edit", "octo/app", "issues_and_prs"),
    ("POST", G, mutation("markPullRequestReadyForReview"), "pr.edit", None, "issues_and_prs"),
    ("POST", G, mutation("convertPullRequestToDraft"), "pr.edit", None, "issues_and_prs"),
    ("POST", f"{R}/pulls/9/reviews", b"{}", "pr.review", "octo/app", "issues_and_prs+converse"),
    ("POST", G, mutation("addPullRequestReview"), "pr.review", None, "issues_and_prs+converse"),
    ("POST", G, mutation("submitPullRequestReview"), "pr.review", None, "issues_and_prs+converse"),
    ("PUT", f"{R}/pulls/9/update-branch", b"{}", "pr.update_branch", "octo/app", "issues_prs_merge"),
    ("PUT", f"{R}/pulls/9/merge", b"{}", "pr.merge", "octo/app", "relay:approval"),
    ("POST", G, mutation("mergePullRequest"), "pr.merge", None, "relay:approval"),
    ("POST", G, mutation("mergeBranch"), "pr.merge", None, "relay:approval"),
    ("POST", G, mutation("enablePullRequestAutoMerge"), "pr.merge", None, "relay:approval"),
]


def expected(rule: str, grant: Grant, graphql: bool) -> tuple[str, str | None]:
    """(verdict, reason) the default table gives ``grant`` for ``rule``."""
    if rule.startswith("relay:"):
        return "relay", "hard_deny"
    mode, _, capability = rule.partition("+")
    if grant.mode >= Mode.parse(mode) or (capability and capability in grant.capabilities):
        return "allow", None
    return "deny", "graphql_mutation" if graphql else "mode_denied"


GRANTS = [Grant(mode, caps) for mode in Mode for caps in (frozenset(), frozenset({CONVERSE}))]


@pytest.mark.parametrize(("method", "url", "body", "operation", "repo", "rule"), ROWS, ids=[f"{r[0]} {r[3]} {r[1][-30:]}" for r in ROWS])
def test_default_row_at_every_mode(
    engine: Engine, method: str, url: str, body: bytes, operation: str, repo: str | None, rule: str
) -> None:
    request = Request.from_url(method, url, body=body)
    for grant in GRANTS:
        decision = engine.decide(request, Caller("bot", grant))
        assert decision.classification is not None
        assert decision.classification.operations == (operation,)
        assert decision.classification.repo == repo
        verdict, reason = expected(rule, grant, url == G)
        got = "allow" if decision.action is Action.FORWARD else decision.verdict.outcome.label  # type: ignore[union-attr]
        assert (got, decision.reason) == (verdict, reason), (grant, decision.message)
        if verdict == "relay":
            assert decision.verdict is not None and decision.verdict.relay == rule.split(":", 1)[1]


def test_explain_shows_default_rows_at_every_mode(tmp_path: Path) -> None:
    """``gitvow explain --jsonl``, the installed plugin found through its entry point."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[agents.bot]\nmode = \"advisory\"\n")
    lines, wanted = [], []
    for method, url, body, operation, repo, rule in ROWS:
        for mode in MODE_NAMES:
            lines.append(json.dumps({"method": method, "url": url, "mode": mode, "body_base64": base64.b64encode(body).decode()}))
            wanted.append((operation, repo, *expected(rule, Grant(Mode.parse(mode)), url == G)))
    result = subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", "explain", "--policy", str(policy), "--jsonl"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, env=dict(os.environ), timeout=120, check=True,
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(wanted)
    for answer, (operation, repo, verdict, reason) in zip(answers, wanted, strict=True):
        assert answer["adapter"] == "github", answer
        assert answer["operations"] == [operation] and answer["repo"] == repo, answer
        assert (answer["verdict"], answer["reason"]) == (verdict, reason), answer
        if verdict != "allow":
            assert answer["message"].endswith(f"reason={reason}") and "\n" not in answer["message"]
        if verdict == "relay":
            # the default relay is `approval`: the line says how the request is staged, not which tool to avoid
            assert "needs a human's approval" in answer["message"] and "do not use" not in answer["message"], answer["message"]


@pytest.mark.parametrize(("body", "operations", "reason"), [
    # a ref named by node id only: the branch rules cannot judge it (docs/policy.md)
    (mutation("updateRef", '{refId: "REF_1", oid: "' + "a" * 40 + '"}'), ("ref.write",), "change_unestablished"),
    (mutation("updateRef", '{refId: "REF_1", oid: "' + "a" * 40 + '", force: true}'), ("ref.write", "ref.force"),
     "ref_force"),
    (mutation("deleteRef", '{refId: "REF_1"}'), ("ref.write", "ref.delete"), "ref_delete"),
])
def test_graphql_ref_updates_by_node_id_are_refused_at_every_mode(
    engine: Engine, body: bytes, operations: tuple[str, ...], reason: str
) -> None:
    request = Request.from_url("POST", G, body=body)
    for grant in GRANTS:
        decision = engine.decide(request, Caller("bot", grant))
        assert decision.classification is not None and decision.classification.operations == operations
        if grant.mode >= Mode.ISSUES_AND_PRS:
            assert decision.action is Action.DENY and decision.reason == reason, (grant, decision.message)
