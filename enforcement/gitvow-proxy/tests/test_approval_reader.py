"""The approval summary shows what the forge will read, never a decoy (each attempt kept here)."""

from __future__ import annotations

import json

import pytest

from gitvow_proxy.approval_reader import describe

GHES = "https://ghes.test:443"
JSON = (("Content-Type", "application/json"),)


def test_rest_reads_top_level_keys_not_a_nested_decoy() -> None:
    body = json.dumps({"meta": {"title": "Fix a typo", "head": "typo", "base": "main"},
                       "title": "Remove the audit log", "head": "evil", "base": "release"}).encode()
    summary = describe(("pr.create",), "POST", f"{GHES}/api/v3/repos/team/app/pulls", body, JSON)
    assert (summary["title"], summary["head"], summary["base"]) == ("Remove the audit log", "evil", "release")
    only_decoy = json.dumps({"meta": {"title": "Fix a typo", "head": "typo"}}).encode()
    summary = describe(("pr.create",), "POST", f"{GHES}/api/v3/repos/team/app/pulls", only_decoy, JSON)
    assert "title" not in summary and "head" not in summary


def test_gitlab_branches_in_a_posts_query_string_are_shown() -> None:
    url = "https://gitlab.test/api/v4/projects/7/merge_requests?source_branch=evil&target_branch=main&title=Q"
    summary = describe(("pr.create",), "POST", url, b"", ())
    assert (summary["head"], summary["base"], summary["title"]) == ("evil", "main", "Q")
    both = describe(("pr.create",), "POST", url, json.dumps({"source_branch": "harmless"}).encode(), JSON)
    assert both["head"] == "evil (query string) / harmless (body)" and "ambiguous" in both


def test_graphql_each_aliased_write_is_its_own_operation() -> None:
    query = """mutation { a: createPullRequest(input: {repositoryId: "R_1", title: "One", headRefName: "x",
        baseRefName: "main"}) { clientMutationId }
      b: createPullRequest(input: {repositoryId: "R_1", title: "Two", headRefName: "y", baseRefName: "main"}) {
        clientMutationId } }"""
    summary = describe(("pr.create",), "POST", f"{GHES}/api/graphql", json.dumps({"query": query}).encode(), JSON)
    writes = summary["writes"]
    assert [(w["field"], w["title"], w["head"]) for w in writes] == [
        ("createPullRequest (as a)", "One", "x"), ("createPullRequest (as b)", "Two", "y")]
    assert all(w["operation"] == "pr.create" for w in writes)


def test_graphql_reads_declared_variables_and_their_defaults_only() -> None:
    query = """mutation($title: String = "Declared default", $head: String!) {
      createPullRequest(input: {repositoryId: "R_1", title: $title, headRefName: $head, baseRefName: $base}) {
        clientMutationId } }"""
    body = json.dumps({"query": query, "variables": {"head": "feature", "base": "decoy-undeclared"}}).encode()
    summary = describe(("pr.create",), "POST", f"{GHES}/api/graphql", body, JSON)
    assert summary["title"] == "Declared default" and summary["head"] == "feature"
    assert "base" not in summary  # $base is not declared: the forge would refuse the document


def test_graphql_merge_shows_its_pull_request_and_method() -> None:
    query = "mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id, mergeMethod: SQUASH}) { clientMutationId } }"
    body = json.dumps({"query": query, "variables": {"id": "PR_7"}}).encode()
    summary = describe(("pr.merge",), "POST", f"{GHES}/api/graphql", body, JSON)
    assert summary["pull request id"] == "PR_7" and summary["merge method"] == "SQUASH"
    assert summary["field"] == "mergePullRequest"


def test_unreadable_bodies_say_so() -> None:
    summary = describe(("pr.create",), "POST", f"{GHES}/api/v3/repos/team/app/pulls", b"\x1f\x8b...",
                       (("Content-Encoding", "gzip"),))
    assert "gzip" in summary["unreadable"]
    summary = describe(("pr.create",), "POST", f"{GHES}/api/graphql", b"{not json", JSON)
    assert "unreadable" in summary


def test_an_mcp_tool_call_is_read_from_its_arguments() -> None:
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "create_pull_request", "arguments": {
        "owner": "team", "repo": "app", "title": "Via MCP", "head": "x", "base": "main", "meta": {"title": "decoy"}}}}
    summary = describe(("pr.create",), "POST", "https://api.githubcopilot.com/mcp/", json.dumps(call).encode(), JSON)
    assert (summary["tool"], summary["title"], summary["head"], summary["owner"]) == ("create_pull_request", "Via MCP",
                                                                                      "x", "team")


def test_slack_text_cannot_carry_an_agents_link() -> None:
    from gitvow_proxy.approvals import Approval
    from gitvow_proxy.notify import payload
    from gitvow_proxy.settings import Webhook

    body = json.dumps({"title": "<https://evil.test|Approve here> <!channel>", "head": "x", "base": "main"}).encode()
    approval = Approval(id="7K3F2Q", fingerprint="f", agent="coder", operations=("pr.create",), repo="team/app",
                        adapter="github", method="POST", url=f"{GHES}/api/v3/repos/team/app/pulls", headers=JSON,
                        body=body, created=0.0, expires=1.0)
    text = json.loads(payload(Webhook(url="https://hooks.test/x", format="slack"), "staged", approval,
                              "https://desk.test/login?approval=7K3F2Q", None))["text"]
    assert "<https://evil.test" not in text and "<!channel>" not in text and "&lt;https://evil.test" in text
    assert text.endswith("<https://desk.test/login?approval=7K3F2Q|Open it on the desk>")


def test_a_github_api_write_shows_what_it_changes_decoded() -> None:
    """The contents API and ``createCommitOnBranch`` carry files base64-encoded: the human sees
    the branch, the paths and each file as the write leaves it, read by the adapter that judged it."""
    pytest.importorskip("gitvow_github")
    import base64

    workflow = "on: push\njobs:\n  deploy:\n    runs-on: self-hosted\n"
    encoded = base64.b64encode(workflow.encode()).decode()
    rest = describe(("contents.write",), "PUT", "https://api.github.com/repos/o/r/contents/.github/workflows/ci.yml",
                    json.dumps({"message": "ci", "content": encoded, "branch": "agent/ci"}).encode(),
                    (("content-type", "application/json"),), adapter="github")
    assert rest["refs"] == "refs/heads/agent/ci fast-forward" and rest["paths"] == ".github/workflows/ci.yml"
    assert "runs-on: self-hosted" in rest["file .github/workflows/ci.yml"]
    query = ("mutation($i: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $i) { commit { oid } } }")
    body = json.dumps({"query": query, "variables": {"i": {
        "branch": {"repositoryNameWithOwner": "o/r", "branchName": "agent/ci"}, "message": {"headline": "h"},
        "expectedHeadOid": "a" * 40, "fileChanges": {"additions": [{"path": ".github/workflows/ci.yml",
                                                                    "contents": encoded}]}}}}).encode()
    graphql = describe(("ref.write",), "POST", "https://api.github.com/graphql", body, adapter="github")
    assert graphql["field"] == "createCommitOnBranch" and "runs-on: self-hosted" in graphql[
        "file .github/workflows/ci.yml"]
