"""PyGithub as a real client: what it sends to a loopback GHES stand-in classifies as the call means.

The server records every request and answers with just enough JSON for PyGithub to build
its objects (each object's ``url`` points back at the server, as GitHub's do). Each
recorded request then goes through the pipeline with the loopback host mapped to the
``github`` adapter in the policy, exactly as an operator maps a GHES host.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import load
from gitvow.policy.load import Policy
from gitvow.request import Request

github = pytest.importorskip("github")

Seen = tuple[str, str, bytes]


class Recorder(BaseHTTPRequestHandler):
    seen: list[Seen]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, body))  # type: ignore[attr-defined]
        host = f"http://{self.headers['host']}"
        path = self.path.split("?", 1)[0]
        if self.command == "DELETE" or path.endswith(("/dispatches", "/update-branch")):
            payload: object = {} if path.endswith("/update-branch") else None
        elif path.endswith("/labels") and "/issues/" in path:
            payload = [{"url": f"{host}/api/v3/repos/octo/app/labels/bug", "name": "bug"}]
        else:
            base = path.rsplit("/", 1)[0] if path.endswith(("/merge", "/comments")) else path
            payload = {
                "url": host + base, "number": 7, "id": 1, "name": "x", "merged": True, "sha": "a" * 40,
                "message": "ok", "full_name": "octo/app", "html_url": host + base,
                "content": {"path": "a.txt", "sha": "b" * 40, "url": host + base},
                "commit": {"sha": "c" * 40, "url": host + base},
                "object": {"sha": "a" * 40, "type": "commit", "url": host + base},
            }
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(204 if payload is None else 200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    srv.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_pygithub_calls_classify_as_their_operations(server: ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    gh = github.Github(
        base_url=f"http://127.0.0.1:{port}/api/v3", auth=github.Auth.Token("t0ken"), retry=None, lazy=True,
        seconds_between_requests=0, seconds_between_writes=0,
    )
    repo = gh.get_repo("octo/app")
    seen: list[Seen] = server.seen  # type: ignore[attr-defined]
    calls: list[tuple[str, int, int]] = []

    def call(operation: str, fn: Callable[[], object]) -> None:
        before = len(seen)
        fn()
        calls.append((operation, before, len(seen)))

    call("pr.create", lambda: repo.create_pull(title="t", body="b", base="main", head="feature"))
    pull = repo.get_pull(7)
    call("pr.review", lambda: pull.create_review(body="looks fine", event="COMMENT"))
    call("pr.update_branch", pull.update_branch)
    call("pr.merge", pull.merge)
    issue = repo.get_issue(3)
    call("issue.comment", lambda: issue.create_comment("hi"))
    call("label.add", lambda: issue.add_to_labels("bug"))
    call("issue.edit", lambda: issue.edit(state="closed"))
    call("issue.create", lambda: repo.create_issue(title="t"))
    call("label.manage", lambda: repo.create_label("bug", "ff0000"))
    call("contents.write", lambda: repo.create_file("docs/a.txt", "m", "content", branch="main"))
    call("ref.write", lambda: repo.create_git_ref("refs/heads/x", "a" * 40))
    call("repo.fork", repo.create_fork)
    call("repo.delete", repo.delete)

    plugins = load()
    engine = Engine(Policy(hosts={f"127.0.0.1:{port}": "github"}, relays=plugins.relays), plugins)
    caller = Caller("pygithub", Grant(Mode.ISSUES_PRS_MERGE))
    problems = []
    for operation, start, end in calls:
        writes = [s for s in seen[start:end] if s[0] != "GET"]
        if len(writes) != 1:
            problems.append(f"{operation}: PyGithub sent {[(m, p) for m, p, _ in writes]}")
            continue
        method, path, body = writes[0]
        request = Request.from_url(method, f"http://127.0.0.1:{port}{path}", body=body)
        decision = engine.decide(request, caller)
        assert decision.classification is not None
        if decision.classification.operations != (operation,) or decision.classification.repo != "octo/app":
            problems.append(f"{method} {path}: {decision.classification.operations} on {decision.classification.repo}, expected {operation}")
    assert problems == []
