"""A real client: python-gitlab talks to a loopback server that records what arrives.

Nothing here is hand-written wire format: the requests are whatever python-gitlab (and, for
GraphQL, its gql/httpx client) actually sends, classified as the proxy would classify them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gitvow.request import Classification, Request
from gitvow.testing import RecordingServer, Reply, Seen
from gitvow_gitlab.adapter import GitLabAdapter

gitlab = pytest.importorskip("gitlab")


def respond(seen: Seen) -> Reply:
    if seen.path.startswith("/api/graphql"):
        payload: object = {"data": {"result": {"errors": []}}}
    elif seen.method == "GET" and seen.route.endswith(("notes", "labels", "merge_requests")):
        payload = []
    else:
        payload = {"id": 1, "iid": 7, "name": "bug", "title": "t", "labels": [], "state": "opened",
                   "project_id": 1, "body": "x", "color": "#ff0000"}
    return 201 if seen.method == "POST" else 200, {"content-type": "application/json"}, json.dumps(payload).encode()


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with RecordingServer(respond) as recorder:
        yield recorder


@pytest.fixture
def gl(server: RecordingServer) -> object:
    return gitlab.Gitlab(server.url, private_token="glpat-test", retry_transient_errors=False)


def classified(server: RecordingServer) -> list[tuple[str, str, Classification]]:
    adapter = GitLabAdapter()
    out = []
    for seen in server.seen:
        request = Request.from_url(seen.method, f"{server.url}{seen.path}", headers=seen.headers, body=seen.body)
        out.append((seen.method, seen.path, adapter.classify(request)))
    return out


def only(server: RecordingServer) -> Classification:
    found = classified(server)
    assert len(found) == 1, [f"{m} {p}" for m, p, _ in found]
    return found[0][2]


def test_create_merge_request_by_full_path(server: RecordingServer, gl: object) -> None:
    project = gl.projects.get("group/sub/proj", lazy=True)  # type: ignore[attr-defined]
    project.mergerequests.create({"source_branch": "fix", "target_branch": "main", "title": "Fix"})
    got = only(server)
    assert server.seen[0].path == "/api/v4/projects/group%2Fsub%2Fproj/merge_requests"
    assert (got.operations, got.repo) == (("pr.create",), "group/sub/proj")


def test_merge_merge_request(server: RecordingServer, gl: object) -> None:
    mr = gl.projects.get("group/proj", lazy=True).mergerequests.get(7, lazy=True)  # type: ignore[attr-defined]
    mr.merge(should_remove_source_branch=True, merge_when_pipeline_succeeds=True)
    got = only(server)
    assert server.seen[0].method == "PUT"
    assert (got.operations, got.repo) == (("pr.merge",), "group/proj")


def test_notes_on_merge_requests_and_issues(server: RecordingServer, gl: object) -> None:
    project = gl.projects.get("group/proj", lazy=True)  # type: ignore[attr-defined]
    project.mergerequests.get(7, lazy=True).notes.create({"body": "LGTM"})
    project.issues.get(3, lazy=True).notes.create({"body": "Thanks"})
    assert [c.operations for _, _, c in classified(server)] == [("issue.comment",), ("issue.comment",)]


def test_project_label_is_label_manage_not_label_add(server: RecordingServer, gl: object) -> None:
    project = gl.projects.get("group/proj", lazy=True)  # type: ignore[attr-defined]
    project.labels.create({"name": "bug", "color": "#ff0000"})
    assert only(server).operations == ("label.manage",)


def test_relabelling_an_issue_is_an_edit_that_adds_labels(server: RecordingServer, gl: object) -> None:
    """python-gitlab's save() sends only the changed attributes: here ``labels``, which replaces
    the issue's whole label set (it can remove labels), so it is ``issue.edit`` + ``label.add``."""
    issue = gl.projects.get("group/proj", lazy=True).issues.get(3, lazy=True)  # type: ignore[attr-defined]
    issue.labels = ["bug"]
    issue.save()
    got = only(server)
    assert json.loads(server.seen[0].body) == {"labels": ["bug"]}
    assert got.operations == ("issue.edit", "label.add")


def test_review_rebase_and_numeric_ids(server: RecordingServer, gl: object) -> None:
    mr = gl.projects.get(42, lazy=True).mergerequests.get(7, lazy=True)  # type: ignore[attr-defined]
    mr.approve()
    mr.rebase()
    mr.discussions.create({"body": "nit", "position": {"position_type": "text", "base_sha": "a", "start_sha": "a",
                                                       "head_sha": "b", "new_path": "f.py", "new_line": 3}})
    mr.discussions.create({"body": "general"})
    mr.title = "renamed"
    mr.save()
    found = classified(server)
    assert [c.operations for _, _, c in found] == [
        ("pr.review",), ("pr.update_branch",), ("pr.review",), ("issue.comment",), ("pr.edit",),
    ]
    assert all(c.repo is None and c.details["project_id"] == 42 for _, _, c in found)


def test_branches_files_and_dangerous_classes(server: RecordingServer, gl: object) -> None:
    project = gl.projects.get("group/proj", lazy=True)  # type: ignore[attr-defined]
    project.branches.create({"branch": "fix", "ref": "main"})
    project.files.create({"file_path": "docs/a.md", "branch": "main", "content": "x", "commit_message": "m"})
    project.variables.create({"key": "TOKEN", "value": "v"})
    project.pipelines.create({"ref": "main"})
    project.forks.create({})
    project.delete()
    found = classified(server)
    assert [c.operations[0] for _, _, c in found] == [
        "ref.write", "contents.write", "secret.write", "workflow.dispatch", "repo.fork", "repo.delete",
    ]
    assert "/repository/files/docs%2Fa%2Emd" in found[1][1] or "/repository/files/docs%2Fa.md" in found[1][1]


def test_reads_are_read(server: RecordingServer, gl: object) -> None:
    project = gl.projects.get("group/proj", lazy=True)  # type: ignore[attr-defined]
    project.mergerequests.list(get_all=False)
    project.labels.list(get_all=False)
    assert [c.operations for _, _, c in classified(server)] == [("read",), ("read",)]


def test_graphql_client(server: RecordingServer) -> None:
    pytest.importorskip("gql")
    client = gitlab.GraphQL(server.url, token="glpat-test")
    client.execute('mutation { mergeRequestAccept(input: {projectPath: "group/proj", iid: "7"}) { errors } }')
    client.execute('mutation { createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "hi"}) { errors } }')
    client.execute('mutation { destroyNote(input: {id: "gid://gitlab/Note/1"}) { errors } }')
    found = classified(server)
    assert all(path == "/api/graphql" for _, path, _ in found)
    assert [c.operations for _, _, c in found] == [("pr.merge",), ("issue.comment",), ("unknown",)]
    assert found[0][2].repo == "group/proj"
    assert found[2][2].unknown_code == "graphql_mutation"


def test_an_issue_python_gitlab_creates_is_read_from_title_and_description(server: RecordingServer, gl: object) -> None:
    from gitvow.request import IssueDraft

    project = gl.projects.get("group/proj", lazy=True)  # type: ignore[attr-defined]
    project.issues.create({"title": "Crash on start", "description": "## Why\nit crashes", "labels": "bug"})
    result = only(server)
    assert result.operations == ("issue.create",)
    assert result.issues == (IssueDraft("Crash on start", "## Why\nit crashes"),)
