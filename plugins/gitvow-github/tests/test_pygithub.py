"""PyGithub as a real client: what it sends to a loopback GHES stand-in classifies as the call means.

The server records every request and answers with just enough JSON for PyGithub to build
its objects (each object's ``url`` points back at the server, as GitHub's do). Each
recorded request then goes through the pipeline with the loopback host mapped to the
``github`` adapter in the policy, exactly as an operator maps a GHES host.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import load
from gitvow.policy.load import Policy
from gitvow.request import Request
from gitvow.testing import RecordingServer, Reply, Seen

github = pytest.importorskip("github")

def respond(seen: Seen) -> Reply:
    host = f"http://{seen.headers['host']}"
    path = seen.route
    if seen.method == "DELETE" or path.endswith(("/dispatches", "/update-branch")):
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
    return 204 if payload is None else 200, {"content-type": "application/json"}, data


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with RecordingServer(respond) as srv:
        yield srv


def test_pygithub_calls_classify_as_their_operations(server: RecordingServer) -> None:
    port = server.port
    gh = github.Github(
        base_url=f"http://127.0.0.1:{port}/api/v3", auth=github.Auth.Token("t0ken"), retry=None, lazy=True,
        seconds_between_requests=0, seconds_between_writes=0,
    )
    repo = gh.get_repo("octo/app")
    calls: list[tuple[str, int, int]] = []

    def call(operation: str, fn: Callable[[], object]) -> None:
        before = len(server.seen)
        fn()
        calls.append((operation, before, len(server.seen)))

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
    seen = server.seen
    problems = []
    for operation, start, end in calls:
        writes = [s for s in seen[start:end] if s.method != "GET"]
        if len(writes) != 1:
            problems.append(f"{operation}: PyGithub sent {[(s.method, s.path) for s in writes]}")
            continue
        method, path, body = writes[0].method, writes[0].path, writes[0].body
        request = Request.from_url(method, f"http://127.0.0.1:{port}{path}", body=body)
        decision = engine.decide(request, caller)
        assert decision.classification is not None
        if decision.classification.operations != (operation,) or decision.classification.repo != "octo/app":
            problems.append(f"{method} {path}: {decision.classification.operations} on {decision.classification.repo}, expected {operation}")
    assert problems == []
