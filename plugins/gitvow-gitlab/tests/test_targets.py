"""What a GitLab request targets: a numeric project id is a target GitLab resolves
(``GET /projects/:id``), project paths are read from any GraphQL argument, global ids of
objects in a project stay targets."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from gitvow.request import Request, Resolution, Target
from gitvow.targets import Fetch
from gitvow.testing import RecordingServer, Seen
from gitvow_gitlab import GitLabAdapter


def test_a_numeric_project_id_is_a_target() -> None:
    c = GitLabAdapter().classify(Request.from_url("POST", "https://gitlab.com/api/v4/projects/424242/issues",
                                                  body=b'{"title": "t"}', headers={"content-type": "application/json"}))
    assert c.operations == ("issue.create",) and c.repos == ()
    assert c.targets == (Target("project", "424242", at="/api/v4/projects/424242"),)
    named = GitLabAdapter().classify(Request.from_url("POST", "https://gitlab.com/api/v4/projects/team%2Fapp/issues",
                                                      body=b"{}", headers={"content-type": "application/json"}))
    assert named.repos == ("team/app",) and named.targets == ()


def test_a_merge_request_into_another_project_targets_it_too() -> None:
    c = GitLabAdapter().classify(Request.from_url(
        "POST", "https://gitlab.com/api/v4/projects/team%2Ffork/merge_requests",
        body=b'{"source_branch": "x", "target_branch": "main", "title": "t", "target_project_id": 424242}',
        headers={"content-type": "application/json"}))
    assert c.repos == ("team/fork",)
    assert c.targets == (Target("project", "424242", at="/api/v4/projects/424242"),)
    form = GitLabAdapter().classify(Request.from_url(
        "POST", "https://gitlab.com/api/v4/projects/9/merge_requests", body=b"title=t&target_project_id=9",
        headers={"content-type": "application/x-www-form-urlencoded"}))
    assert form.targets == (Target("project", "9", at="/api/v4/projects/9"),)
    odd = GitLabAdapter().classify(Request.from_url(
        "POST", "https://gitlab.com/api/v4/projects/team%2Ffork/merge_requests",
        body=b'{"title": "t", "target_project_id": "team/app"}', headers={"content-type": "application/json"}))
    assert odd.targets == (Target("project", "unreadable"),)  # never resolves: fail closed


def test_graphql_project_paths_anywhere_and_global_ids() -> None:
    query = ('mutation { a: createIssue(input: {projectPath: "team/app", title: "t", labelIds: ["gid://gitlab/ProjectLabel/1"]})'
             ' { clientMutationId } b: createNote(input: {noteableId: "gid://gitlab/Issue/5", body: "x"}) { clientMutationId } }')
    body = json.dumps({"query": query}).encode()
    c = GitLabAdapter().classify(Request.from_url("POST", "https://gitlab.com/api/graphql", body=body,
                                                  headers={"content-type": "application/json"}))
    assert c.repos == ("team/app",)
    assert c.targets == (Target("gid", "gid://gitlab/Issue/5"),)  # the label says nothing about the project
    assert not c.repo_established


def test_a_project_global_id_is_resolved_like_a_numeric_id() -> None:
    query = 'mutation { createIssue(input: {projectPath: "team/open", title: "t"}) { clientMutationId } }'
    body = json.dumps({"query": query.replace('projectPath: "team/open"', 'projectPath: "team/open", '
                                              'moveTo: "gid://gitlab/Project/424242"')}).encode()
    c = GitLabAdapter().classify(Request.from_url("POST", "https://gitlab.com/api/graphql", body=body,
                                                  headers={"content-type": "application/json"}))
    assert c.repos == ("team/open",)
    assert c.targets == (Target("project", "424242", at="/api/v4/projects/424242"),)


def _forge(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    if seen.route == "/api/v4/projects/424242":
        return 200, {}, json.dumps({"id": 424242, "path_with_namespace": "team/app"}).encode()
    if seen.route == "/api/v4/projects/5":
        return 200, {}, json.dumps({"id": 6, "path_with_namespace": "team/liar"}).encode()
    return 404, {}, b"{}"


def _fetch(server: RecordingServer) -> Fetch:
    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(urllib.request.Request(server.url + path, method=method), timeout=10) as r:
                return int(r.status), bytes(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    return fetch


def test_resolve_reads_the_projects_path() -> None:
    targets = [Target("project", p, at=f"/api/v4/projects/{p}") for p in ("424242", "5", "404")]
    with RecordingServer(_forge) as server:
        answers = GitLabAdapter().resolve([*targets, Target("gid", "gid://gitlab/Issue/5")], _fetch(server))
        asked = [s.route for s in server.seen]
    assert answers == {targets[0]: Resolution("team/app", "project")}  # an answer about another id is not one
    assert asked == ["/api/v4/projects/424242", "/api/v4/projects/5", "/api/v4/projects/404"]
