"""py-gitea, a real Gitea API client, against a loopback stand-in that records what it sends.

What the client puts on the wire is classified by the adapter and decided by the engine at an
``issues_only`` agent: issue work goes through, repository administration does not. The
stand-in answers just enough JSON for the client to carry on; it never leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.request import Request
from gitvow.testing import RecordingServer, Reply, Seen

gitea = pytest.importorskip("gitea", reason="py-gitea is the real client this test drives")

TOKEN = "0123456789abcdef0123456789abcdef01234567"
USER = {"id": 1, "login": "team", "username": "team", "full_name": "Team", "email": "team@example.test"}
REPO = {"id": 7, "name": "app", "full_name": "team/app", "owner": USER, "default_branch": "main", "private": False}
ISSUE = {"id": 30, "number": 3, "title": "Crash", "body": "", "state": "open", "user": USER}


def respond(seen: Seen) -> Reply:
    if seen.path.endswith("/issues") and seen.method == "POST":
        payload: object = ISSUE
    elif seen.path.endswith("/topics") or seen.method == "DELETE":
        payload = {}
    elif "/contents/" in seen.path:
        payload = {"content": {"path": "docs/a.md", "sha": "abc"}}
    else:
        payload = REPO
    return 201 if seen.method == "POST" else 200, {"content-type": "application/json"}, json.dumps(payload).encode()


@pytest.fixture
def recorder() -> Iterator[RecordingServer]:
    with RecordingServer(respond) as server:
        yield server


class Recorded(Gates):
    def credential(self, ctx: Context) -> str | None:
        return TOKEN


def test_what_py_gitea_sends_is_classified_and_decided(recorder: RecordingServer) -> None:
    host, port = "127.0.0.1", recorder.server_address[1]
    client = gitea.Gitea(f"http://{host}:{port}", token_text=TOKEN)
    repo = gitea.Repository.request(client, "team", "app")
    repo.create_issue("Crash", assignees=[], description="Steps to reproduce")
    repo.add_topic("cli")
    repo.create_file("docs/a.md", "aGk=")
    repo.delete()

    plugins = installed()
    engine = Engine(Policy(hosts={f"{host}:{port}": "gitea"}, relays=plugins.relays), plugins)
    agent = Caller("agent", Grant(Mode.ISSUES_ONLY))
    results = []
    for seen in recorder.seen:
        request = Request.from_url(seen.method, f"http://{host}:{port}{seen.path}", headers=seen.headers, body=seen.body)
        decision = engine.decide(request, agent, Recorded())
        assert decision.classification is not None
        results.append((seen.method, decision.classification.operations, decision.classification.repo, decision.action))
        if "issue.create" in decision.classification.operations:
            # [issue_shape] reads the issue from the fields Gitea binds, as py-gitea sent them.
            assert [(d.title, d.body) for d in decision.classification.issues] == [("Crash", "Steps to reproduce")]
        if decision.action is Action.FORWARD:
            # The injected header is the one the real client authenticates with.
            assert dict(decision.headers) == {"authorization": seen.headers["authorization"]}

    assert results == [
        ("GET", ("read",), "team/app", Action.FORWARD),
        ("POST", ("issue.create",), "team/app", Action.FORWARD),
        ("PUT", ("repo.admin",), "team/app", Action.DENY),
        ("POST", ("contents.write",), "team/app", Action.DENY),
        ("DELETE", ("repo.delete",), "team/app", Action.DENY),
    ]
