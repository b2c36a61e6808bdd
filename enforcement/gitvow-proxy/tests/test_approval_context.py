"""The approval's context from the forge, against a loopback stand-in forge that answers the
context routes (GitHub REST and GraphQL, GitLab, Gitea); and pinning a merge to the head seen."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gitvow_proxy.approval_context import DIFF_LIMIT, Context, forge_get, gather, pin
from gitvow_proxy.forge_recheck import merged

SHA = "a" * 40
PATCH = "@@ -1,2 +1,3 @@\n line\n-old\n+new\n+more"


class Forge:
    """Answers ``routes[path]`` (JSON, or text for a str) and records every request it got."""

    def __init__(self) -> None:
        self.routes: dict[str, Any] = {}
        self.seen: list[tuple[str, str, bytes, dict[str, str]]] = []
        forge = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                forge.seen.append((self.command, self.path, body, dict(self.headers)))
                found = forge.routes.get(self.path)
                if callable(found):
                    found = found(body)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = found.encode() if isinstance(found, str) else json.dumps(found).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def get(self, token: str = "forge-token") -> Any:
        return forge_get("http", "127.0.0.1", self.port, lambda _path: {"Authorization": f"Bearer {token}"}, None,
                         time.monotonic() + 10)


@pytest.fixture
def forge() -> Iterator[Forge]:
    running = Forge()
    yield running
    running.server.shutdown()


def github_pull(forge: Forge, prefix: str = "/api/v3", diff: str = PATCH) -> None:
    root = f"{prefix}/repos/team/app"
    forge.routes[f"{root}/pulls/7"] = {
        "number": 7, "title": "Make it faster", "user": {"login": "coder-bot"}, "state": "open", "draft": False,
        "head": {"ref": "speed", "sha": SHA}, "base": {"ref": "main"}, "mergeable": True, "mergeable_state": "clean",
        "html_url": "https://ghes.test/team/app/pull/7", "commits": 2}
    forge.routes[f"{root}/commits/{SHA}/check-runs?per_page=100"] = {"check_runs": [
        {"name": "tests", "status": "completed", "conclusion": "success"},
        {"name": "lint", "status": "completed", "conclusion": "failure"}]}
    forge.routes[f"{root}/commits/{SHA}/status"] = {"state": "success", "statuses": [{"context": "ci/x", "state": "success"}]}
    forge.routes[f"{root}/pulls/7/reviews?per_page=100"] = [{"user": {"login": "alice"}, "state": "APPROVED"}]
    forge.routes[f"{root}/pulls/7/files?per_page=100"] = [
        {"filename": "src/fast.py", "additions": 2, "deletions": 1, "status": "modified", "patch": diff}]


def test_github_rest_merge_context(forge: Forge) -> None:
    github_pull(forge)
    url = "https://ghes.test/api/v3/repos/team/app/pulls/7/merge"
    found = gather("github", ("pr.merge",), url, b'{"merge_method":"squash"}', forge.get())
    assert found is not None and found.error is None, found
    pull = found.pull
    assert pull is not None
    assert (found.repo, pull.number, pull.title, pull.author, pull.head, pull.base) == (
        "team/app", 7, "Make it faster", "coder-bot", "speed", "main")
    assert found.head_sha == SHA and pull.mergeable == "yes (clean)"
    assert "2 checks: 1 failure, 1 success" in pull.checks and "failing: lint" in pull.checks
    assert pull.reviews == "approved by alice"
    assert merged(found) is None  # the forge did not say (a stuck merge stays with an operator)
    assert found.changes is not None and found.changes.files[0].path == "src/fast.py"
    assert "+new" in found.changes.diff and (found.changes.additions, found.changes.deletions) == (2, 1)
    assert all(headers["Authorization"] == "Bearer forge-token" for *_, headers in forge.seen)
    assert Context.from_json(json.loads(json.dumps(found.as_json()))) == found


def test_github_graphql_merge_resolves_the_node_id(forge: Forge) -> None:
    github_pull(forge)
    forge.routes["/api/graphql"] = lambda body: {"data": {"node": {
        "__typename": "PullRequest", "number": 7, "repository": {"nameWithOwner": "Team/App"}}}} \
        if json.loads(body)["variables"]["id"] == "PR_kwDO7" else {"data": {"node": None}}
    query = "mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id, mergeMethod: REBASE}) { clientMutationId } }"
    body = json.dumps({"query": query, "variables": {"id": "PR_kwDO7"}}).encode()
    found = gather("github", ("pr.merge",), "https://ghes.test/api/graphql", body, forge.get())
    assert found is not None and found.error is None and found.repo == "team/app" and found.number == 7
    assert found.pull is not None and found.pull.title == "Make it faster"


def test_github_creation_shows_the_comparison(forge: Forge) -> None:
    forge.routes["/api/v3/repos/team/app/compare/main...feature"] = {
        "total_commits": 1, "commits": [{"sha": SHA}],
        "files": [{"filename": "README.md", "additions": 1, "deletions": 0, "status": "modified", "patch": "+hello"}]}
    body = json.dumps({"title": "Add it", "head": "feature", "base": "main"}).encode()
    found = gather("github", ("pr.create",), "https://ghes.test/api/v3/repos/team/app/pulls", body, forge.get())
    assert found is not None and found.error is None and found.kind == "create" and found.head_sha == SHA
    assert found.changes is not None and "+hello" in found.changes.diff


def test_a_failed_fetch_is_a_plain_error_and_the_diff_is_cut(forge: Forge) -> None:
    url = "https://ghes.test/api/v3/repos/team/app/pulls/7/merge"
    failed = gather("github", ("pr.merge",), url, b"{}", forge.get())
    assert failed is not None and failed.error == "could not ask the forge: GET /api/v3/repos/team/app/pulls/7 answered 404"
    github_pull(forge, diff="+" + "x" * (DIFF_LIMIT + 10))
    cut = gather("github", ("pr.merge",), url, b"{}", forge.get())
    assert cut is not None and cut.changes is not None and cut.changes.truncated
    assert len(cut.changes.diff.encode()) <= DIFF_LIMIT
    unreachable = forge_get("http", "127.0.0.1", 9, lambda _p: {}, None, time.monotonic() + 2)
    down = gather("github", ("pr.merge",), url, b"{}", unreachable)
    assert down is not None and down.error is not None and down.error.startswith("could not ask the forge")


def test_gitlab_merge_by_quick_action_note(forge: Forge) -> None:
    mr = "/api/v4/projects/team%2Fapp/merge_requests/3"
    forge.routes[mr] = {"iid": 3, "title": "Tidy", "author": {"username": "coder"}, "source_branch": "tidy",
                        "target_branch": "main", "sha": SHA, "state": "opened", "detailed_merge_status": "mergeable",
                        "references": {"full": "team/app!3"}, "head_pipeline": {"status": "success"},
                        "web_url": "https://gitlab.test/team/app/-/merge_requests/3"}
    forge.routes[f"{mr}/approvals"] = {"approved_by": [{"user": {"username": "bob"}}]}
    forge.routes[f"{mr}/diffs?per_page=100"] = [{"old_path": "a.txt", "new_path": "a.txt", "diff": PATCH}]
    found = gather("gitlab", ("issue.comment", "pr.merge"), f"https://gitlab.test{mr}/notes",
                   json.dumps({"body": "/merge"}).encode(), forge.get())
    assert found is not None and found.error is None, found
    assert found.repo == "team/app" and found.pull is not None and found.pull.checks == "pipeline success"
    assert found.pull.reviews == "approved by bob" and found.changes is not None
    assert (found.changes.additions, found.changes.deletions) == (2, 1)
    assert merged(found) is False  # "opened"; "merged" is what GitLab says of a merged one


def test_gitea_merge(forge: Forge) -> None:
    root = "/api/v1/repos/team/app"
    forge.routes[f"{root}/pulls/4"] = {"number": 4, "title": "Gitea change", "user": {"login": "coder"},
                                       "head": {"ref": "x", "sha": SHA}, "base": {"ref": "main"}, "mergeable": True,
                                       "state": "closed", "merged": True,
                                       "html_url": "https://gitea.test/team/app/pulls/4"}
    forge.routes[f"{root}/commits/{SHA}/status"] = {"state": "success", "statuses": [{"context": "ci", "status": "success"}]}
    forge.routes[f"{root}/pulls/4/reviews"] = [{"state": "APPROVED", "user": {"login": "dora"}}]
    forge.routes[f"{root}/pulls/4/files?limit=100"] = [{"filename": "b.go", "additions": 3, "deletions": 0, "status": "added"}]
    forge.routes[f"{root}/pulls/4.diff"] = "diff --git a/b.go b/b.go\n+package b\n"
    found = gather("gitea", ("pr.merge",), f"https://gitea.test{root}/pulls/4/merge", b'{"Do":"merge"}', forge.get())
    assert found is not None and found.error is None and found.head_sha == SHA
    assert found.pull is not None and found.pull.reviews == "approved by dora" and "ci success" in found.pull.checks
    assert found.changes is not None and "+package b" in found.changes.diff
    assert merged(found) is True and Context.from_json(json.loads(json.dumps(found.as_json()))) == found


def test_pin_sets_the_expected_head_each_forge_reads() -> None:
    assert json.loads(pin("github", "https://h/api/v3/repos/o/r/pulls/7/merge", b'{"merge_method":"squash"}', SHA)) == {
        "merge_method": "squash", "sha": SHA}
    assert json.loads(pin("github", "https://h/api/v3/repos/o/r/pulls/7/merge", b"", SHA)) == {"sha": SHA}
    assert json.loads(pin("gitlab", "https://h/api/v4/projects/1/merge_requests/3/merge", b"{}", SHA)) == {"sha": SHA}
    assert json.loads(pin("gitea", "https://h/api/v1/repos/o/r/pulls/4/merge", b'{"Do":"merge"}', SHA)) == {
        "Do": "merge", "head_commit_id": SHA}
    kept = b'{"sha":"' + b"b" * 40 + b'"}'
    assert pin("github", "https://h/api/v3/repos/o/r/pulls/7/merge", kept, SHA) == kept
    literal = json.dumps({"query": 'mutation { mergePullRequest(input: {pullRequestId: "PR_7"}) { clientMutationId } }'})
    pinned = json.loads(pin("github", "https://h/api/graphql", literal.encode(), SHA))
    assert f'expectedHeadOid: "{SHA}"' in pinned["query"] and 'pullRequestId: "PR_7"' in pinned["query"]
    variable = json.dumps({"query": "mutation($i: MergePullRequestInput!) { mergePullRequest(input: $i) { clientMutationId } }",
                           "variables": {"i": {"pullRequestId": "PR_7"}}})
    pinned = json.loads(pin("github", "https://h/api/graphql", variable.encode(), SHA))
    assert pinned["variables"]["i"] == {"pullRequestId": "PR_7", "expectedHeadOid": SHA}


def test_gitlab_creation_and_mcp_calls(forge: Forge) -> None:
    project = "/api/v4/projects/team%2Fapp"
    forge.routes[project] = {"path_with_namespace": "team/app"}
    forge.routes[f"{project}/repository/compare?from=main&to=tidy&straight=false"] = {
        "commit": {"id": SHA}, "commits": [{"id": SHA}], "diffs": [{"old_path": "a", "new_path": "a", "diff": PATCH}]}
    body = json.dumps({"source_branch": "tidy", "target_branch": "main", "title": "T"}).encode()
    found = gather("gitlab", ("pr.create",), f"https://gitlab.test{project}/merge_requests", body, forge.get())
    assert found is not None and found.error is None and found.repo == "team/app" and found.head_sha == SHA
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "merge_pull_request", "arguments": {"owner": "team", "repo": "app"}}})
    mcp = gather("github", ("pr.merge",), "https://api.githubcopilot.com/mcp/", call.encode(), forge.get())
    assert mcp is not None and mcp.error is not None and "MCP tool call" in mcp.error
    assert pin("github", "https://api.githubcopilot.com/mcp/", call.encode(), SHA) == call.encode()


def test_two_merges_in_one_document_get_no_context_and_no_pin(forge: Forge) -> None:
    """Each would need its own head: the human is told the forge was not asked, nothing is pinned
    to the wrong pull request."""
    query = ('mutation { a: mergePullRequest(input: {pullRequestId: "PR_1"}) { clientMutationId } '
             'b: mergePullRequest(input: {pullRequestId: "PR_2"}) { clientMutationId } }')
    body = json.dumps({"query": query}).encode()
    found = gather("github", ("pr.merge",), "https://ghes.test/api/graphql", body, forge.get())
    assert found is not None and found.error is not None and forge.seen == []
    assert pin("github", "https://ghes.test/api/graphql", body, SHA) == body
