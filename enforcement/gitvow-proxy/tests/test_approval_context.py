"""The proxy's driving of the approval's context, against a loopback stand-in forge: the adapter
that judged the request asks through the proxy's credential-carrying transport; failures are
plain lines for the human; the diff is cut; MCP calls and documents with two merges get no
context and no pin. What each forge's adapter reads is its plugin's test
(plugins/gitvow-*/tests/test_approval_context.py) and the contract kit's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gitvow.adapter import Adapter
from gitvow.approval_context import DIFF_LIMIT, ApprovalContext
from gitvow.plugins import installed
from gitvow.request import Classification, Request
from gitvow_proxy.approval_context import forge_get, gather, pin
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


def adapter(name: str) -> Adapter:
    found = installed().adapters.get(name)
    if found is None:
        pytest.skip(f"the {name} adapter is not installed here")
    return found


def staged(method: str, url: str, body: bytes) -> Request:
    return Request.from_url(method, url, body=body)


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


MERGE_URL = "https://ghes.test/api/v3/repos/team/app/pulls/7/merge"


def test_the_adapter_asks_through_the_proxys_transport(forge: Forge) -> None:
    github_pull(forge)
    found = gather(adapter("github"), ("pr.merge",), staged("PUT", MERGE_URL, b'{"merge_method":"squash"}'), forge.get())
    assert found is not None and found.error is None, found
    assert found.fetched_at > 0 and found.head_sha == SHA and found.repo == "team/app" and found.number == 7
    assert found.pull is not None and found.pull.title == "Make it faster"
    assert merged(found) is None  # the forge did not say (a stuck merge stays with an operator)
    # every question carried the credential the proxy injects, and only it
    assert forge.seen and all(headers["Authorization"] == "Bearer forge-token" for *_, headers in forge.seen)
    assert all(headers["User-Agent"] == "gitvow-proxy" for *_, headers in forge.seen)
    assert ApprovalContext.from_json(json.loads(json.dumps(found.as_json()))) == found


def test_a_failed_fetch_is_a_plain_error_and_the_diff_is_cut(forge: Forge) -> None:
    github = adapter("github")
    failed = gather(github, ("pr.merge",), staged("PUT", MERGE_URL, b"{}"), forge.get())
    assert failed is not None and failed.error == "could not ask the forge: GET /api/v3/repos/team/app/pulls/7 answered 404"
    assert (failed.repo, failed.number) == ("team/app", 7)
    github_pull(forge, diff="+" + "x" * (DIFF_LIMIT + 10))
    cut = gather(github, ("pr.merge",), staged("PUT", MERGE_URL, b"{}"), forge.get())
    assert cut is not None and cut.changes is not None and cut.changes.truncated
    assert len(cut.changes.diff.encode()) <= DIFF_LIMIT
    unreachable = forge_get("http", "127.0.0.1", 9, lambda _p: {}, None, time.monotonic() + 2)
    down = gather(github, ("pr.merge",), staged("PUT", MERGE_URL, b"{}"), unreachable)
    assert down is not None and down.error is not None and down.error.startswith("could not ask the forge")


def test_mcp_calls_and_unread_requests_get_no_context_and_no_pin(forge: Forge) -> None:
    github = adapter("github")
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "merge_pull_request", "arguments": {"owner": "team", "repo": "app"}}}).encode()
    mcp = gather(github, ("pr.merge",), staged("POST", "https://api.githubcopilot.com/mcp/", call), forge.get())
    assert mcp is not None and mcp.error is not None and "MCP tool call" in mcp.error
    assert pin(github, staged("POST", "https://api.githubcopilot.com/mcp/", call), SHA) == call
    # each merge of a document with two would need its own head: the forge is not asked, nothing is pinned
    query = ('mutation { a: mergePullRequest(input: {pullRequestId: "PR_1"}) { clientMutationId } '
             'b: mergePullRequest(input: {pullRequestId: "PR_2"}) { clientMutationId } }')
    two = staged("POST", "https://ghes.test/api/graphql", json.dumps({"query": query}).encode())
    found = gather(github, ("pr.merge",), two, forge.get())
    assert found is not None and found.error == "the request does not say which pull request or branches it acts on"
    assert forge.seen == [] and pin(github, two, SHA) == two.body
    assert gather(github, ("issue.comment",), staged("POST", MERGE_URL, b"{}"), forge.get()) is None


class Unread(Adapter):
    """An adapter that reads no context, and says why."""

    name = "unread"

    def classify(self, request: Request) -> Classification:
        return Classification(("pr.merge",), repo="team/app")

    def approval_unsupported(self) -> Mapping[str, str]:
        return {"context": "this forge has no pull-request API", "pin": "its merge takes no head"}


def test_an_adapter_that_declares_no_context_is_not_asked(forge: Forge) -> None:
    url = "https://forge.test/team/app/merge/7"
    assert gather(Unread(), ("pr.merge",), staged("POST", url, b"{}"), forge.get()) is None
    assert pin(Unread(), staged("POST", url, b"{}"), SHA) == b"{}" and forge.seen == []


def test_a_bitbucket_merge_is_read_and_not_pinned(forge: Forge) -> None:
    bitbucket = adapter("bitbucket")
    root = "/2.0/repositories/team/app/pullrequests/7"
    forge.routes[root] = {"id": 7, "title": "Tidy", "state": "MERGED", "author": {"display_name": "Coder"},
                          "source": {"branch": {"name": "tidy"}, "commit": {"hash": "9f3c2a1b7d4e"}},
                          "destination": {"branch": {"name": "main"}}}
    url = f"https://api.bitbucket.org{root}/merge"
    found = gather(bitbucket, ("pr.merge",), staged("POST", url, b"{}"), forge.get())
    assert found is not None and found.error is None and found.head_sha == "9f3c2a1b7d4e" and merged(found) is True
    assert pin(bitbucket, staged("POST", url, b"{}"), "9f3c2a1b7d4e") == b"{}"


def test_a_pinned_merge_carries_the_head_its_adapter_names() -> None:
    assert json.loads(pin(adapter("github"), staged("PUT", MERGE_URL, b'{"merge_method":"squash"}'), SHA)) == {
        "merge_method": "squash", "sha": SHA}
    assert json.loads(pin(adapter("gitea"), staged("POST", "https://gitea.test/api/v1/repos/o/r/pulls/4/merge",
                                                   b'{"Do":"merge"}'), SHA)) == {"Do": "merge", "head_commit_id": SHA}
    note = staged("POST", "https://gitlab.test/api/v4/projects/1/merge_requests/3/notes", b'{"body": "/merge"}')
    assert pin(adapter("gitlab"), note, SHA) == note.body  # a note cannot carry one: the head is asked for instead
