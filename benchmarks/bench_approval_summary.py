"""What a human's look at an approval costs: the summary (read where the forge reads) and the
desk's detail card with the forge's context. Neither is on an agent's request path (the
summary is read when the CLI or the desk shows an approval; the context is fetched off it).

Run: ``pytest benchmarks/bench_approval_summary.py --benchmark-only`` (figures in docs/benchmarks.md).
CI runs it with ``--benchmark-disable`` so it stays correct; timings are never asserted.
"""

from __future__ import annotations

import json

import pytest

from gitvow.approval_context import ApprovalContext, Changes, FileChange, PullRequest

reader = pytest.importorskip("gitvow_proxy.approval_reader")
desk = pytest.importorskip("gitvow_proxy.desk")
approvals = pytest.importorskip("gitvow_proxy.approvals")

REST = json.dumps({"title": "Add the thing", "body": "Why: " + "x" * 500, "head": "feature", "base": "main"}).encode()
GRAPHQL = json.dumps({"query": "mutation($input: MergePullRequestInput!) { mergePullRequest(input: $input) { "
                               "clientMutationId } }",
                      "variables": {"input": {"pullRequestId": "PR_kwDO7", "mergeMethod": "SQUASH"}}}).encode()
JSON = (("content-type", "application/json"),)


def test_summary_of_a_rest_creation(benchmark: object) -> None:
    found = benchmark(reader.describe, ("pr.create",), "POST", "https://ghes.test/api/v3/repos/team/app/pulls",  # type: ignore[operator]
                      REST, JSON)
    assert found["title"] == "Add the thing"


def test_summary_of_a_graphql_merge(benchmark: object) -> None:
    found = benchmark(reader.describe, ("pr.merge",), "POST", "https://ghes.test/api/graphql", GRAPHQL, JSON)  # type: ignore[operator]
    assert found["pull request id"] == "PR_kwDO7"


def test_detail_card_with_a_200_file_diff(benchmark: object) -> None:
    files = tuple(FileChange(f"src/m{n}.py", 10, 3, "modified") for n in range(200))
    diff = "".join(f"diff --git a/src/m{n}.py b/src/m{n}.py\n@@ -1 +1 @@\n-old\n+new\n" for n in range(200))
    context = ApprovalContext(
        "merge", repo="team/app", pull=PullRequest(number=7, title="T", head_sha="a" * 40),
        changes=Changes(files, diff), head_sha="a" * 40)
    approval = approvals.Approval(
        id="7K3F2Q", fingerprint="f", agent="coder", operations=("pr.merge",), repo=None, adapter="github",
        method="POST", url="https://ghes.test:443/api/graphql", headers=JSON, body=GRAPHQL, created=0.0, expires=1.0)
    session = desk.Session("key", "token", "alice", "csrf", 1.0)
    page = benchmark(desk._approval_card, approval, session, context, full=True)  # type: ignore[operator]
    assert "src/m199.py" in page
