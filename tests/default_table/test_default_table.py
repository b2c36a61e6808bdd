"""``gitvow explain`` against every row of the default table (docs/policy.md), at every mode, with and without ``converse``.

Each row names the adapter that serves it; rows whose adapter is not installed in this tox
environment are skipped (the ``all`` environments install every plugin and run them all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gitvow.modes import MODE_NAMES
from gitvow.plugins import installed
from gitvow_gitsmart.adapter import push_body

GH = "https://api.github.com"
GQL = f"{GH}/graphql"
LINEAR = "https://api.linear.app/graphql"
A, B = "a" * 40, "b" * 40


def pkt(line: bytes) -> bytes:
    return b"%04x" % (len(line) + 4) + line


PUSH_BODY = push_body((A, B, "refs/heads/main"))


def gql(query: str, **variables: Any) -> str:
    return json.dumps({"query": query, "variables": variables})


# (operation, adapter, method, url, body, default rule as `gitvow ops` prints it)
ROWS: list[tuple[str, str, str, str, str | bytes, str]] = [
    ("read", "github", "GET", f"{GH}/repos/o/r/pulls", "", "advisory"),
    ("read", "github", "POST", GQL, gql("query { viewer { login } }"), "advisory"),
    ("auth.login", "github", "POST", "https://github.com/login/device/code", "client_id=x", "advisory"),
    ("auth.login", "github", "POST", "https://github.com/login/oauth/access_token", "", "advisory"),
    ("git.fetch", "github", "POST", "https://github.com/o/r.git/git-upload-pack", "0000", "advisory"),
    ("git.push", "github", "POST", "https://github.com/o/r.git/git-receive-pack", PUSH_BODY, "issues_and_prs"),
    ("git.push", "github", "GET", "https://github.com/o/r.git/info/refs?service=git-receive-pack", "", "issues_and_prs"),
    ("ref.write", "github", "POST", f"{GH}/repos/o/r/git/refs", '{"ref": "refs/heads/x", "sha": "a"}', "issues_and_prs"),
    ("ref.write", "github", "POST", f"{GH}/repos/o/r/git/commits", "{}", "issues_and_prs"),
    # Deleting a ref is a ref write *and* a deletion, which no mode allows by default.
    ("ref.write+ref.delete", "github", "DELETE", f"{GH}/repos/o/r/git/refs/heads/x", "", "deny"),
    ("ref.write", "github", "POST", GQL, gql('mutation { createRef(input: {repositoryId: "R", name: "refs/heads/x", oid: "a"}) { clientMutationId } }'), "issues_and_prs"),
    ("branch.protect", "github", "POST", GQL, gql('mutation { createBranchProtectionRule(input: {repositoryId: "R", pattern: "main"}) { clientMutationId } }'), "issues_and_prs"),
    ("issue.create", "github", "POST", f"{GH}/repos/o/r/issues", "{}", "issues_only"),
    ("issue.edit", "github", "PATCH", f"{GH}/repos/o/r/issues/1", "{}", "issues_only"),
    ("issue.comment", "github", "POST", f"{GH}/repos/o/r/issues/1/comments", "{}", "issues_only or converse"),
    ("issue.comment", "github", "POST", GQL, gql('mutation { addComment(input: {subjectId: "I", body: "hi"}) { clientMutationId } }'), "issues_only or converse"),
    ("label.add", "github", "POST", f"{GH}/repos/o/r/issues/1/labels", "{}", "issues_only"),
    ("issue.relate", "github", "POST", f"{GH}/repos/o/r/issues/1/sub_issues", "{}", "issues_only"),
    ("issue.relate", "github", "POST", f"{GH}/repos/o/r/issues/1/dependencies/blocked_by", "{}", "issues_only"),
    ("pr.create", "github", "POST", f"{GH}/repos/o/r/pulls", "{}", "relay(approval)"),
    ("pr.create", "github", "POST", GQL, gql('mutation { createPullRequest(input: {repositoryId: "R", baseRefName: "main", headRefName: "x", title: "t"}) { clientMutationId } }'), "relay(approval)"),
    ("pr.edit", "github", "PATCH", f"{GH}/repos/o/r/pulls/1", "{}", "issues_and_prs"),
    ("pr.edit", "github", "POST", GQL, gql('mutation { markPullRequestReadyForReview(input: {pullRequestId: "P"}) { clientMutationId } }'), "issues_and_prs"),
    ("pr.edit", "github", "POST", GQL, gql('mutation { convertPullRequestToDraft(input: {pullRequestId: "P"}) { clientMutationId } }'), "issues_and_prs"),
    ("pr.review", "github", "POST", f"{GH}/repos/o/r/pulls/1/reviews", "{}", "issues_and_prs or converse"),
    ("pr.review", "github", "POST", GQL, gql('mutation { addPullRequestReview(input: {pullRequestId: "P"}) { clientMutationId } }'), "issues_and_prs or converse"),
    ("pr.review", "github", "POST", GQL, gql('mutation { submitPullRequestReview(input: {event: COMMENT}) { clientMutationId } }'), "issues_and_prs or converse"),
    ("pr.update_branch", "github", "PUT", f"{GH}/repos/o/r/pulls/1/update-branch", "{}", "issues_prs_merge"),
    ("pr.merge", "github", "PUT", f"{GH}/repos/o/r/pulls/1/merge", "{}", "relay(approval)"),
    ("pr.merge", "github", "POST", GQL, gql('mutation { mergePullRequest(input: {pullRequestId: "P"}) { clientMutationId } }'), "relay(approval)"),
    ("pr.merge", "github", "POST", GQL, gql('mutation { mergeBranch(input: {repositoryId: "R", base: "main", head: "x"}) { clientMutationId } }'), "relay(approval)"),
    ("pr.merge", "github", "POST", GQL, gql('mutation { enablePullRequestAutoMerge(input: {pullRequestId: "P"}) { clientMutationId } }'), "relay(approval)"),
    ("unknown", "github", "POST", f"{GH}/repos/o/r/no-such-route", "{}", "deny"),
    ("unknown", "github", "POST", GQL, gql('mutation { noSuchMutation(input: {}) { clientMutationId } }'), "deny"),
    ("read", "linear", "POST", LINEAR, gql("query { viewer { id } }"), "advisory"),
    ("issue.create", "linear", "POST", LINEAR, gql('mutation { issueCreate(input: {teamId: "T", title: "t"}) { success } }'), "issues_only"),
    # A sub-issue is created *and* linked: both operations, so neither row can be bypassed.
    ("issue.create+issue.relate", "linear", "POST", LINEAR, gql('mutation { issueCreate(input: {teamId: "T", title: "t", parentId: "P"}) { success } }'), "issues_only"),
    ("issue.edit", "linear", "POST", LINEAR, gql('mutation { issueUpdate(id: "I", input: {title: "t"}) { success } }'), "issues_only"),
    ("issue.comment", "linear", "POST", LINEAR, gql('mutation { commentCreate(input: {issueId: "I", body: "b"}) { success } }'), "issues_only or converse"),
    ("issue.relate", "linear", "POST", LINEAR, gql('mutation { issueRelationCreate(input: {issueId: "I", relatedIssueId: "J", type: blocks}) { success } }'), "issues_only"),
    ("issue.relate", "linear", "POST", LINEAR, gql('mutation { projectCreate(input: {name: "p", teamIds: []}) { success } }'), "issues_only"),
    ("issue.relate", "linear", "POST", LINEAR, gql('mutation { projectUpdate(id: "P", input: {name: "p"}) { success } }'), "issues_only"),
    ("agent.session", "linear", "POST", LINEAR, gql('mutation { agentActivityCreate(input: {agentSessionId: "S", content: {}}) { success } }'), "advisory or converse"),
    ("agent.session", "linear", "POST", LINEAR, gql('mutation { agentSessionUpdate(id: "S", input: {}) { success } }'), "advisory or converse"),
    ("attachment.link", "linear", "POST", LINEAR, gql('mutation { attachmentCreate(input: {issueId: "I", url: "https://x", title: "t"}) { success } }'), "issues_and_prs"),
    ("unknown", "linear", "POST", LINEAR, gql('mutation { issueDelete(id: "I") { success } }'), "deny"),
    ("inference.call", "inference", "POST", "https://api.githubcopilot.com/chat/completions", "{}", "advisory"),
]

RELAY_CODES = {"relay(approval)": "approval"}


def expected(rule: str, mode: str, converse: bool) -> tuple[str, str | None]:
    if rule in RELAY_CODES:
        return "relay", "hard_deny"
    if rule == "deny":
        return "deny", None
    needs, _, capability = rule.partition(" or ")
    if MODE_NAMES.index(mode) >= MODE_NAMES.index(needs) or (capability == "converse" and converse):
        return "allow", None
    return "deny", None


def _explain(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    result = subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", "explain", "--jsonl"],
        input=stdin, capture_output=True, text=True, env=dict(os.environ), timeout=120, check=True,
    )
    return [json.loads(line) for line in result.stdout.splitlines()]


GRANTS = [(mode, converse) for mode in MODE_NAMES for converse in (False, True)]


@pytest.fixture(scope="module")
def answers() -> list[list[dict[str, Any]]]:
    """Every row at every grant, in one ``gitvow explain --jsonl`` run (one start-up, not 47)."""
    served = installed().adapters
    lines = [
        {"method": method, "url": url, **_body(body), "mode": mode, "capabilities": ["converse"] if converse else []}
        for _op, adapter, method, url, body, _rule in ROWS
        if adapter in served
        for mode, converse in GRANTS
    ]
    flat = iter(_explain(lines))
    return [[next(flat) for _ in GRANTS] if row[1] in served else [] for row in ROWS]


@pytest.mark.parametrize("index", range(len(ROWS)), ids=[f"{r[0]}-{r[1]}-{r[2]}-{i}" for i, r in enumerate(ROWS)])
def test_default_row_at_every_mode(answers: list[list[dict[str, Any]]], index: int) -> None:
    op, adapter, method, url, _body, rule = ROWS[index]
    if adapter not in installed().adapters:
        pytest.skip(f"adapter {adapter!r} is not installed in this environment")
    row_answers = answers[index]
    assert len(row_answers) == len(GRANTS)
    for (mode, converse), answer in zip(GRANTS, row_answers, strict=True):
        where = f"{method} {url} at {mode}{' +converse' if converse else ''}: {answer}"
        assert answer["adapter"] == adapter, where
        assert answer["operations"] == op.split("+"), where
        verdict, code = expected(rule, mode, converse)
        if code is not None:
            assert answer["reason"] == code, where
        assert answer["verdict"] == verdict, where
        if verdict == "relay":
            assert answer["reason"] == "hard_deny" and answer["relay"] == RELAY_CODES[rule], where
        elif verdict == "deny":
            assert answer["reason"] and answer["message"].endswith(f"reason={answer['reason']}"), where
        if "/repos/o/r/" in url or "github.com/o/r.git" in url:
            assert answer["repo"] == "o/r", where


def _body(body: str | bytes) -> dict[str, str]:
    """A JSON line's body: text as ``body``, a binary push (with its pack) as ``body_base64``."""
    import base64

    return {"body_base64": base64.b64encode(body).decode()} if isinstance(body, bytes) else {"body": body}
