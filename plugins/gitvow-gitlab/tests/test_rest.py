"""REST v4: the mapping rows, URL-encoded project paths, the trie, and what cannot be trusted."""

from __future__ import annotations

import base64
import json

import pytest

from gitvow.adapter import configured
from gitvow.errors import PolicyError
from gitvow.request import Request
from gitvow.routing import RouteTrie, TemplateError
from gitvow_gitlab.adapter import GitLabAdapter
from gitvow_gitlab.routes import REASONS, build

API = "https://gitlab.com/api/v4"
P = f"{API}/projects/group%2Fsub%2Fproj"


@pytest.fixture
def adapter() -> GitLabAdapter:
    return GitLabAdapter()


def call(adapter: GitLabAdapter, method: str, url: str, body: object = None, **headers: str) -> tuple[tuple[str, ...], str | None]:
    data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    if data and "content-type" not in headers:
        headers["content-type"] = "application/json"
    got = adapter.classify(Request.from_url(method, url, body=data, headers=headers))
    return got.operations, got.repo


# (method, path under the project, body, operations): the mapping, row by row.
ROWS = [
    ("POST", "/merge_requests", {"title": "t", "source_branch": "a", "target_branch": "main"}, ("pr.create",)),
    ("PUT", "/merge_requests/7/merge", {}, ("pr.merge",)),
    ("PUT", "/merge_requests/7/merge", {"merge_when_pipeline_succeeds": True}, ("pr.merge",)),
    ("POST", "/merge_trains/merge_requests/7", {}, ("pr.merge",)),
    ("PUT", "/merge_requests/7", {"title": "new", "description": "d"}, ("pr.edit",)),
    ("PUT", "/merge_requests/7", {"state_event": "close"}, ("pr.edit",)),
    ("PUT", "/merge_requests/7", {"add_labels": "ready"}, ("label.add",)),
    ("PUT", "/merge_requests/7", {"labels": "a,b", "title": "x"}, ("pr.edit", "label.add")),
    ("POST", "/merge_requests/7/approve", {}, ("pr.review",)),
    ("POST", "/merge_requests/7/unapprove", {}, ("pr.review",)),
    ("POST", "/merge_requests/7/discussions", {"body": "x", "position": {"new_line": 1}}, ("pr.review",)),
    ("POST", "/merge_requests/7/discussions", {"body": "x"}, ("issue.comment",)),
    ("POST", "/merge_requests/7/discussions/abc/notes", {"body": "x"}, ("pr.review",)),
    ("PUT", "/merge_requests/7/discussions/abc", {"resolved": True}, ("pr.review",)),
    ("POST", "/merge_requests/7/draft_notes", {"note": "x"}, ("pr.review",)),
    ("POST", "/merge_requests/7/draft_notes/bulk_publish", {}, ("pr.review",)),
    ("POST", "/merge_requests/7/notes", {"body": "x"}, ("issue.comment",)),
    ("PUT", "/merge_requests/7/notes/9", {"body": "x"}, ("issue.comment",)),
    ("DELETE", "/merge_requests/7/notes/9", None, ("unknown",)),
    ("PUT", "/merge_requests/7/rebase", {}, ("pr.update_branch",)),
    ("POST", "/merge_requests/7/pipelines", {}, ("workflow.dispatch",)),
    ("POST", "/issues", {"title": "t"}, ("issue.create",)),
    ("PUT", "/issues/3", {"state_event": "close"}, ("issue.edit",)),
    ("PUT", "/issues/3", {"add_labels": "bug"}, ("label.add",)),
    ("PUT", "/issues/3", {"remove_labels": "bug"}, ("issue.edit",)),
    ("POST", "/issues/3/notes", {"body": "x"}, ("issue.comment",)),
    ("POST", "/issues/3/discussions", {"body": "x"}, ("issue.comment",)),
    ("POST", "/issues/3/award_emoji", {"name": "thumbsup"}, ("issue.comment",)),
    ("POST", "/issues/3/links", {"target_project_id": 1, "target_issue_iid": 2}, ("issue.relate",)),
    ("DELETE", "/issues/3/links/4", None, ("unknown",)),
    ("POST", "/issues/3/move", {"to_project_id": 2}, ("unknown",)),
    ("POST", "/repository/branches", {"branch": "b", "ref": "main"}, ("ref.write",)),
    ("DELETE", "/repository/branches/feature%2Fnested", None, ("ref.write", "ref.delete")),
    ("POST", "/repository/tags", {"tag_name": "v1", "ref": "main"}, ("ref.write",)),
    ("DELETE", "/repository/tags/v1", None, ("ref.write", "ref.delete")),
    ("POST", "/repository/commits", {"branch": "main", "actions": []}, ("ref.write",)),
    ("POST", "/repository/commits/abc/cherry_pick", {"branch": "main"}, ("ref.write",)),
    ("POST", "/protected_branches", {"name": "main"}, ("branch.protect",)),
    ("PATCH", "/protected_branches/main", {"allow_force_push": True}, ("branch.protect",)),
    ("DELETE", "/protected_branches/main", None, ("branch.protect",)),
    ("POST", "/labels", {"name": "bug", "color": "#f00"}, ("label.manage",)),
    ("PUT", "/labels/bug", {"new_name": "defect"}, ("label.manage",)),
    ("DELETE", "/labels/bug", None, ("label.manage",)),
    ("POST", "/repository/files/src%2Fmain.py", {"branch": "main", "content": "x"}, ("contents.write",)),
    ("PUT", "/repository/files/src%2Fmain.py", {"branch": "main", "content": "x"}, ("contents.write",)),
    ("DELETE", "", None, ("repo.delete",)),
    ("POST", "/archive", {}, ("repo.delete",)),
    ("POST", "/fork", {}, ("repo.fork",)),
    ("PUT", "", {"visibility": "public"}, ("repo.admin",)),
    ("POST", "/members", {"user_id": 1, "access_level": 50}, ("repo.admin",)),
    ("POST", "/deploy_keys", {"key": "ssh-ed25519 x"}, ("repo.admin",)),
    ("POST", "/releases", {"tag_name": "v1"}, ("release.write",)),
    ("POST", "/snippets", {"title": "s"}, ("gist.write",)),
    ("POST", "/pipeline", {"ref": "main"}, ("workflow.dispatch",)),
    ("POST", "/jobs/5/retry", {}, ("workflow.dispatch",)),
    ("POST", "/variables", {"key": "K", "value": "v"}, ("secret.write",)),
    ("PUT", "/variables/K", {"value": "v"}, ("secret.write",)),
    ("POST", "/uploads", None, ("attachment.link",)),
    ("POST", "/statuses/abc", {"state": "success"}, ("unknown",)),
    ("PUT", "/packages/pypi", None, ("unknown",)),
    ("POST", "/ci/lint", {"content": "x"}, ("read",)),
]


@pytest.mark.parametrize(("method", "path", "body", "expected"), ROWS, ids=[f"{r[0]} {r[1] or '/'} {r[3]}" for r in ROWS])
def test_mapping_rows(adapter: GitLabAdapter, method: str, path: str, body: object, expected: tuple[str, ...]) -> None:
    ops, repo = call(adapter, method, f"{P}{path}", body)
    assert ops == expected
    assert repo == "group/sub/proj"


def test_every_get_head_and_options_is_read(adapter: GitLabAdapter) -> None:
    for method in ("GET", "HEAD", "OPTIONS"):
        assert call(adapter, method, f"{P}/merge_requests/7/merge")[0] == ("read",)
        assert call(adapter, method, f"{API}/no/such/thing")[0] == ("read",)


def test_numeric_project_id_reports_no_repository_but_keeps_the_id(adapter: GitLabAdapter) -> None:
    got = adapter.classify(Request.from_url("POST", f"{API}/projects/4242/merge_requests", body=b"{}"))
    assert got.operations == ("pr.create",)
    assert got.repo is None
    assert got.details["project_id"] == 4242


@pytest.mark.parametrize(
    ("segment", "repo"),
    [
        ("group%2Fproj", "group/proj"),
        ("group%2Fsub%2Fsubsub%2Fproj", "group/sub/subsub/proj"),
        ("Group%2FMy.Proj-1", "Group/My.Proj-1"),
        ("group%2fproj", "group/proj"),
        ("group%252Fproj", "group%2Fproj"),
    ],
)
def test_url_encoded_full_paths_are_the_repository(adapter: GitLabAdapter, segment: str, repo: str) -> None:
    assert call(adapter, "POST", f"{API}/projects/{segment}/issues", {"title": "t"}) == (("issue.create",), repo)


def test_unencoded_project_path_is_no_route(adapter: GitLabAdapter) -> None:
    ops, _ = call(adapter, "PUT", f"{API}/projects/group/proj/merge_requests/7/merge", {})
    assert ops == ("unknown",)


def test_encoded_route_words_are_matched_decoded(adapter: GitLabAdapter) -> None:
    """A server decodes ``merge%5Frequests`` before routing, so the classifier must too."""
    assert call(adapter, "PUT", f"{P}/merge%5Frequests/7/merge", {})[0] == ("pr.merge",)


def test_trailing_slash_is_the_same_route(adapter: GitLabAdapter) -> None:
    assert call(adapter, "PUT", f"{P}/merge_requests/7/merge/", {})[0] == ("pr.merge",)


@pytest.mark.parametrize(
    ("path", "headers", "body"),
    [
        ("/issues/3/notes", {"x-http-method-override": "PUT"}, b"{}"),
        ("/issues/3/notes", {"x-http-method": "DELETE"}, b"{}"),
        ("/issues/3/notes?_method=DELETE", {}, b"{}"),
        ("/issues/3/notes?%5Fmethod=DELETE", {}, b"{}"),
        ("/issues/3/notes", {"content-type": "application/x-www-form-urlencoded"}, b"body=x&%5fmethod=DELETE"),
        ("/issues/3/notes", {}, b'{"body": "x", "\\u005fmethod": "DELETE"}'),
        ("/issues/3/notes", {"content-type": "application/x-www-form-urlencoded"}, b"body=x&_method=DELETE"),
        ("/issues/3/../../merge_requests/7/merge", {}, b"{}"),
        ("/issues/3/%2E%2E/notes", {}, b"{}"),
        ("/issues//3/notes", {}, b"{}"),
    ],
)
def test_verb_overrides_and_rewritable_paths_are_unknown(adapter: GitLabAdapter, path: str, headers: dict[str, str], body: bytes) -> None:
    assert call(adapter, "POST", f"{P}{path}", body, **headers)[0] == ("unknown",)


def test_body_dependent_routes_take_the_stricter_reading_when_unreadable(adapter: GitLabAdapter) -> None:
    # Notes and descriptions carry quick actions: a body that cannot be read might say /merge.
    multipart = {"content-type": "multipart/form-data; boundary=x"}
    assert call(adapter, "POST", f"{P}/merge_requests/7/discussions", b"--x--", **multipart)[0] == ("unknown",)
    assert call(adapter, "PUT", f"{P}/issues/3", b"{broken")[0] == ("unknown",)


def test_form_bodies_and_query_parameters_are_read_like_json(adapter: GitLabAdapter) -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert call(adapter, "POST", f"{P}/merge_requests/7/discussions", b"body=x&position[new_line]=3", **form)[0] == ("pr.review",)
    assert call(adapter, "PUT", f"{P}/issues/3?add_labels=bug", None)[0] == ("label.add",)


def test_unknown_routes_carry_their_reason(adapter: GitLabAdapter) -> None:
    got = adapter.classify(Request.from_url("DELETE", f"{P}/issues/3"))
    assert got.is_unknown and got.note == REASONS["delete"] and got.unknown_code == "mode_denied"
    unmatched = adapter.classify(Request.from_url("POST", f"{P}/teleport", body=b"{}"))
    assert unmatched.is_unknown and "not a GitLab route" in unmatched.note and unmatched.repo == "group/sub/proj"


def test_non_api_paths(adapter: GitLabAdapter) -> None:
    assert call(adapter, "GET", "https://gitlab.com/group/proj/-/merge_requests")[0] == ("read",)
    assert call(adapter, "POST", "https://gitlab.com/group/proj/-/merge_requests", {})[0] == ("unknown",)
    assert call(adapter, "POST", "https://gitlab.com/api/v3/projects/1/issues", {})[0] == ("unknown",)
    assert call(adapter, "POST", "https://gitlab.com/oauth/token", b"grant_type=x")[0] == ("auth.login",)
    assert call(adapter, "POST", "https://gitlab.com/oauth/applications", b"x")[0] == ("unknown",)


def test_git_paths_delegate_to_gitsmart(adapter: GitLabAdapter) -> None:
    got = adapter.classify(Request.from_url("GET", "https://gitlab.com/group/sub/proj.git/info/refs?service=git-receive-pack"))
    assert (got.operations, got.repo) == (("git.push",), "group/sub/proj")


def test_relative_url_root(adapter: GitLabAdapter) -> None:
    adapter = configured(adapter, {"relative_url_root": "/gitlab"})
    assert call(adapter, "PUT", "https://git.corp.test/gitlab/api/v4/projects/a%2Fb/merge_requests/1/merge", {}) == (("pr.merge",), "a/b")
    got = adapter.classify(Request.from_url("GET", "https://git.corp.test/gitlab/a/b.git/info/refs?service=git-upload-pack"))
    assert (got.operations, got.repo) == (("git.fetch",), "a/b")
    assert call(adapter, "PUT", "https://git.corp.test/api/v4/projects/a%2Fb/merge_requests/1/merge", {})[0] == ("unknown",)


@pytest.mark.parametrize(
    "options",
    [{"nope": 1}, {"graphql_body_limit": 0}, {"graphql_token_limit": "10"}, {"relative_url_root": "gitlab"},
     {"relative_url_root": "/a/../b"}, {"commands_limit": True}],
)
def test_configure_rejects_bad_options(adapter: GitLabAdapter, options: dict[str, object]) -> None:
    with pytest.raises(PolicyError, match="gitlab"):
        configured(adapter, options)


def test_credential_headers_bearer_for_api_basic_for_git_none_for_oauth(adapter: GitLabAdapter) -> None:
    api = adapter.credential_headers(Request.from_url("POST", f"{P}/issues"), "glpat-x")
    assert api == {"authorization": "Bearer glpat-x"}
    graphql = adapter.credential_headers(Request.from_url("POST", "https://gitlab.com/api/graphql"), "glpat-x")
    assert graphql == {"authorization": "Bearer glpat-x"}
    git = adapter.credential_headers(Request.from_url("POST", "https://gitlab.com/g/p.git/git-receive-pack"), "glpat-x")
    assert base64.b64decode(git["authorization"].removeprefix("Basic ")) == b"oauth2:glpat-x"
    assert adapter.credential_headers(Request.from_url("POST", "https://gitlab.com/oauth/token"), "glpat-x") == {}


# -- the trie itself ---------------------------------------------------------------------------


def test_literal_beats_parameter_and_the_walk_backtracks() -> None:
    trie: RouteTrie[str] = RouteTrie()
    trie.add("POST", "/projects/import", "import")
    trie.add("POST", "/projects/:project/issues", "issues")
    trie.add("POST", "/projects/:project/*", "tail")
    assert trie.match("POST", ["projects", "import"]).value == "import"  # type: ignore[union-attr]
    found = trie.match("POST", ["projects", "import", "issues"])  # literal branch dead-ends: backtrack
    assert found is not None and found.value == "issues" and found.params == {"project": "import"}
    assert trie.match("POST", ["projects", "1", "x", "y"]).value == "tail"  # type: ignore[union-attr]
    assert trie.match("POST", ["projects", "1"]).value == "tail"  # type: ignore[union-attr]
    assert trie.match("PUT", ["projects", "1", "issues"]) is None


@pytest.mark.parametrize(
    "table",
    [
        "POST /a/:x pr.edit\nPOST /a/:y/b pr.edit",
        "POST /a pr.edit\nPOST /a pr.edit",
        "POST /a/*/b pr.edit",
        "POST /a no.such.op",
        "GET /a read",
        "POST /a unknown:nope",
        "POST a pr.edit",
        "POST /a",
    ],
)
def test_malformed_tables_are_refused_at_import(table: str) -> None:
    with pytest.raises((ValueError, TemplateError)):
        build(table)
