"""What a GitLab REST write changes (:mod:`gitvow_gitlab.changes`): the commits, files and
branches APIs read exactly, and everything the forge could read otherwise unestablished."""

from __future__ import annotations

import base64
import json

from gitvow.change import Change
from gitvow.request import Classification, Request
from gitvow_gitlab import GitLabAdapter

API = "https://gitlab.com/api/v4/projects/team%2Fapp"
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"
JSON = {"content-type": "application/json"}


def classify(method: str, path: str, body: object = None, *, query: str = "",
             headers: dict[str, str] | None = None) -> Classification:
    raw = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else b"")
    url = f"{API}{path}" + (f"?{query}" if query else "")
    return GitLabAdapter().classify(Request.from_url(method, url, body=raw, headers=headers or JSON))


def change_of(result: Classification) -> Change:
    assert result.change is not None, result
    return result.change


def _commit(**extra: object) -> dict[str, object]:
    return {"branch": "agent/x", "commit_message": "m", "actions": [
        {"action": "create", "file_path": "src/a.py", "content": "print(1)\n"},
        {"action": "move", "file_path": ".gitlab-ci.yml", "previous_path": "ci/old.yml"},
        {"action": "delete", "file_path": "old.txt"},
        {"action": "chmod", "file_path": "run.sh", "execute_filemode": True},
        {"action": "update", "file_path": "b.bin", "encoding": "base64",
         "content": base64.b64encode(b"\x00\x01").decode()},
    ], **extra}


def test_a_commit_names_every_path_and_its_branch() -> None:
    result = classify("POST", "/repository/commits", _commit())
    change = change_of(result)
    assert result.operations == ("ref.write",)
    assert change.paths == ("src/a.py", "ci/old.yml", ".gitlab-ci.yml", "old.txt", "run.sh", "b.bin")
    assert change.refs[0].ref == "refs/heads/agent/x" and change.refs[0].kind == "fast-forward"
    assert change.added_bytes == 9 + 2 and not change.unestablished


def test_force_is_ref_force_unless_explicitly_false() -> None:
    for force in (True, "true", "1", 1, "yes", "anything"):
        result = classify("POST", "/repository/commits", _commit(force=force))
        assert "ref.force" in result.operations, force
    for unforced in (False, "false", "0", 0, None):
        assert "ref.force" not in classify("POST", "/repository/commits", _commit(force=unforced)).operations


def test_a_key_in_base64_content_is_found() -> None:
    body = _commit()
    body["actions"] = [{"action": "create", "file_path": "k.py", "encoding": "base64",
                        "content": base64.b64encode(f"K = '{CLOUD_KEY}'".encode()).decode()}]
    (secret,) = change_of(classify("POST", "/repository/commits", body)).secrets
    assert secret.path == "k.py" and secret.kind == "aws_access_key"


def test_what_gitlab_could_read_otherwise_is_unestablished() -> None:
    bad = [
        _commit(actions=[{"action": "create", "file_path": "ci/../.gitlab-ci.yml", "content": "x"}]),
        _commit(actions=[{"action": "create", "file_path": "/.gitlab-ci.yml", "content": "x"}]),
        _commit(actions=[{"action": "rename", "file_path": "a"}]),
        _commit(actions=[{"action": "create", "file_path": "a", "encoding": "base64", "content": "$$"}]),
        _commit(actions=[{"action": "create", "file_path": "a", "encoding": "gzip", "content": "x"}]),
        _commit(actions="not a list"),
        _commit(branch="refs/heads/main"),
        _commit(branch=None),
    ]
    for body in bad:
        change = change_of(classify("POST", "/repository/commits", body))
        assert change.unestablished, body
    # a name given both in the query string and in the body: which Grape keeps is not ours to guess
    twice = change_of(classify("POST", "/repository/commits", _commit(), query="branch=main"))
    assert twice.unestablished
    form = change_of(classify("POST", "/repository/commits", b"branch=agent%2Fx&actions[][action]=create",
                              headers={"content-type": "application/x-www-form-urlencoded"}))
    assert form.unestablished


def test_the_files_api_reads_its_path_from_the_url_once_decoded() -> None:
    change = change_of(classify("POST", "/repository/files/%2Egitlab-ci%2Eyml",
                                {"branch": "agent/x", "content": "x", "commit_message": "m"}))
    assert change.paths == (".gitlab-ci.yml",) and change.refs[0].ref == "refs/heads/agent/x"
    nested = change_of(classify("PUT", "/repository/files/.gitlab%2Fci%2Fdeploy.yml",
                                {"branch": "agent/x", "content": "eA==", "encoding": "base64"}))
    assert nested.paths == (".gitlab/ci/deploy.yml",) and nested.added_bytes == 1
    escaped = change_of(classify("POST", "/repository/files/ci%2F..%2F.gitlab-ci.yml", {"branch": "agent/x"}))
    assert escaped.unestablished
    deleted = change_of(classify("DELETE", "/repository/files/CODEOWNERS", query="branch=agent%2Fx&commit_message=m"))
    assert deleted.paths == ("CODEOWNERS",) and dict(deleted.diffs)["CODEOWNERS"] == "(deleted)"
    created = change_of(classify("POST", "/repository/files/a.txt", {"branch": "agent/y", "start_branch": "main",
                                                                      "content": "x"}))
    assert created.refs[0].kind == "created"


def test_branches_created_and_deleted() -> None:
    created = classify("POST", "/repository/branches", {"branch": "agent/new", "ref": "main"})
    assert change_of(created).refs[0].ref == "refs/heads/agent/new" and created.operations == ("ref.write",)
    deleted = classify("DELETE", "/repository/branches/agent%2Fold")
    assert deleted.operations == ("ref.write", "ref.delete") and change_of(deleted).refs[0].kind == "deleted"
    merged = classify("DELETE", "/repository/merged_branches")
    assert "ref.delete" in merged.operations and change_of(merged).unestablished
    picked = classify("POST", "/repository/commits/abc/cherry_pick", {"branch": "agent/x"})
    assert change_of(picked).unestablished


def test_a_numeric_project_id_still_carries_the_change_and_its_target() -> None:
    request = Request.from_url("POST", "https://gitlab.com/api/v4/projects/42/repository/commits",
                               body=json.dumps(_commit()).encode(), headers=JSON)
    result = GitLabAdapter().classify(request)
    assert result.targets and change_of(result).paths


def test_the_default_branch_is_read_where_gitlab_serves_git() -> None:
    adapter = GitLabAdapter()
    request = Request.from_url("POST", f"{API}/repository/commits")
    assert adapter.git_repository_path(request, "group/sub/app") == "/group/sub/app.git"


def _graphql(query: str, variables: dict[str, object] | None = None) -> Classification:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = Request.from_url("POST", "https://gitlab.com/api/graphql", body=body, headers=JSON)
    return GitLabAdapter().classify(request)


COMMIT_CREATE = """mutation($input: CommitCreateInput!) { commitCreate(input: $input) { commit { id } errors } }"""


def test_graphql_commit_create_carries_the_same_change() -> None:
    actions = [{"action": "CREATE", "filePath": ".gitlab-ci.yml", "content": "deploy: {}\n"},
               {"action": "MOVE", "filePath": "b.txt", "previousPath": "a.txt"},
               {"action": "UPDATE", "filePath": "k.py", "encoding": "BASE64",
                "content": base64.b64encode(f"K='{CLOUD_KEY}'".encode()).decode()}]
    result = _graphql(COMMIT_CREATE, {"input": {"projectPath": "team/app", "branch": "agent/x", "message": "m",
                                                "actions": actions}})
    change = change_of(result)
    assert result.operations == ("ref.write",) and result.repo == "team/app"
    assert change.paths == (".gitlab-ci.yml", "a.txt", "b.txt", "k.py") and change.refs[0].ref == "refs/heads/agent/x"
    assert [s.path for s in change.secrets] == ["k.py"]
    literal = _graphql('mutation { commitCreate(input: {projectPath: "team/app", branch: "trunk", message: "m", '
                       'actions: [{action: DELETE, filePath: "CODEOWNERS"}]}) { errors } }')
    assert change_of(literal).paths == ("CODEOWNERS",) and change_of(literal).refs[0].branch == "trunk"


def test_graphql_commit_create_that_cannot_be_read_is_unestablished() -> None:
    two = _graphql('mutation { a: commitCreate(input: {projectPath: "t/a", branch: "x", message: "m", actions: []}) '
                   '{ errors } b: commitCreate(input: {projectPath: "t/a", branch: "y", message: "m", actions: []}) '
                   '{ errors } }')
    assert change_of(two).unestablished
    escaped = _graphql(COMMIT_CREATE, {"input": {"projectPath": "t/a", "branch": "agent/x", "message": "m",
                                                 "actions": [{"action": "CREATE", "filePath": "a/../.gitlab-ci.yml"}]}})
    assert change_of(escaped).unestablished


def test_tags_are_refs_of_their_own() -> None:
    created = change_of(classify("POST", "/repository/tags", {"tag_name": "v1", "ref": "main"}))
    assert created.refs[0].ref == "refs/tags/v1" and created.refs[0].kind == "created"
    deleted = classify("DELETE", "/repository/tags/v1")
    assert deleted.operations == ("ref.write", "ref.delete") and change_of(deleted).refs[0].ref == "refs/tags/v1"
    assert change_of(classify("POST", "/repository/tags", {"tag_name": "refs/heads/main", "ref": "x"})).unestablished


def test_a_url_parameter_named_again_in_the_body_is_unestablished() -> None:
    """Grape merges the route's parameters with the body's: a second spelling is not guessed at."""
    other = {"branch": "agent/x", "content": "x", "file_path": ".gitlab-ci.yml"}
    assert change_of(classify("POST", "/repository/files/README.md", other)).unestablished
    same = {"branch": "agent/x", "content": "x", "file_path": "README.md"}
    assert not change_of(classify("POST", "/repository/files/README.md", same)).unestablished
    assert change_of(classify("DELETE", "/repository/branches/agent%2Fx", query="branch=main")).unestablished


def test_a_large_commit_is_read_and_a_key_behind_a_json_escape_is_found() -> None:
    big = _commit(actions=[{"action": "create", "file_path": "big.txt", "content": "x" * (1024 * 1024)}])
    change = change_of(classify("POST", "/repository/commits", big))
    assert not change.unestablished and change.added_bytes == 1024 * 1024
    escaped = json.dumps(_commit(commit_message=CLOUD_KEY)).replace("AKIA", "\\u0041KIA")
    assert [s.kind for s in change_of(classify("POST", "/repository/commits", escaped.encode())).secrets] == \
        ["aws_access_key"]


MR_UPDATE = "mutation($input: MergeRequestUpdateInput!) { mergeRequestUpdate(input: $input) { errors } }"
MR_CREATE = "mutation($input: MergeRequestCreateInput!) { mergeRequestCreate(input: $input) { errors } }"


def test_a_merge_requests_target_branch_is_a_base_change_and_its_source_the_agents_branch() -> None:
    retarget = classify("PUT", "/merge_requests/7", {"target_branch": "main"})
    assert retarget.operations == ("pr.edit",)
    assert [(r.ref, r.kind) for r in change_of(retarget).refs] == [("refs/heads/main", "fast-forward")]
    assert classify("PUT", "/merge_requests/7", {"title": "t"}).change is None
    assert change_of(classify("PUT", "/merge_requests/7", {"target_branch": "refs/heads/main"})).unestablished
    assert change_of(classify("PUT", "/merge_requests/7", {"target_branch": "a"}, query="target_branch=main")
                     ).unestablished  # given twice: which one Grape keeps is not guessed
    opened = change_of(classify("POST", "/merge_requests", {"source_branch": "agent/x", "target_branch": "main"}))
    assert opened.heads == ("agent/x",) and opened.refs == ()
    project = {"projectPath": "team/app", "iid": "7"}
    graphql = change_of(_graphql(MR_UPDATE, {"input": {**project, "targetBranch": "main"}}))
    assert graphql.refs[0].ref == "refs/heads/main"
    assert _graphql(MR_UPDATE, {"input": {**project, "title": "t"}}).change is None
    created = change_of(_graphql(MR_CREATE, {"input": {**project, "sourceBranch": "agent/y", "targetBranch": "main"}}))
    assert created.heads == ("agent/y",)


def test_the_target_branch_quick_action_is_refused() -> None:
    got = classify("POST", "/merge_requests/7/notes", {"body": "/target_branch main"})
    assert "unknown" in got.operations
