"""Gitea's issues API edits pull requests too: ``PATCH …/issues/N`` carries a target whose
type Gitea settles (``GET`` of the same path, ``pull_request`` set or null)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from gitvow.request import Request, Resolution, Target
from gitvow.targets import Fetch, settle
from gitvow.testing import RecordingServer, Seen
from gitvow_gitea.adapter import GiteaAdapter


def _forge(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    number = int(seen.route.rsplit("/", 1)[1])
    if number > 8:
        return 404, {}, b"{}"
    pull = {"merged": False} if number == 7 else None
    body = {"number": number, "pull_request": pull, "repository": {"full_name": "team/app"}}
    return 200, {}, json.dumps(body).encode()


def _fetch(server: RecordingServer) -> Fetch:
    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(urllib.request.Request(server.url + path, method=method), timeout=10) as r:
                return int(r.status), bytes(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    return fetch


def test_an_issue_edit_on_a_pull_request_is_pr_edit() -> None:
    adapter = GiteaAdapter()
    classified = {
        n: adapter.classify(Request.from_url("PATCH", f"https://gitea.example/api/v1/repos/team/app/issues/{n}", body=b"{}"))
        for n in (7, 8, 9)
    }
    assert all(c.operations == ("issue.edit",) and len(c.targets) == 1 for c in classified.values())
    with RecordingServer(_forge) as server:
        answers = adapter.resolve([c.targets[0] for c in classified.values()], _fetch(server))
    assert answers == {classified[7].targets[0]: Resolution("team/app", "pull_request"),
                       classified[8].targets[0]: Resolution("team/app", "issue")}
    assert settle(classified[7], answers).operations == ("pr.edit",)
    assert settle(classified[8], answers).operations == ("issue.edit",)
    assert settle(classified[9], answers).targets == (Target("issue", "/api/v1/repos/team/app/issues/9",
                                                             by_type=(("pull_request", ("pr.edit",)),),
                                                             at="/api/v1/repos/team/app/issues/9"),)
