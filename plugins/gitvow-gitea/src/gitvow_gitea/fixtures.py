"""Wire examples of the ``gitea`` adapter for the contract kit (Codeberg's API, as clients call it)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gitvow.request import ZERO_OID, Fixture
from gitvow.vocabulary import OPERATIONS
from gitvow_gitsmart.adapter import pkt, push_body

HOST = "https://codeberg.org"
API = f"{HOST}/api/v1"
R = f"{API}/repos/team/app"
_JSON = {"content-type": "application/json"}
_OID = "c" * 40


def _body(payload: object) -> bytes:
    return json.dumps(payload).encode()


def _w(method: str, url: str, operation: str | tuple[str, ...], payload: object | None = None, *, repo: str | None = "team/app",
       near_miss: bool = False, note: str = "") -> Fixture:
    body = _body(payload) if payload is not None else b""
    operations = (operation,) if isinstance(operation, str) else operation
    return Fixture(method, url, operations, body=body, headers=_JSON if body else {}, repo=repo,
                   near_miss=near_miss, note=note)


FIXTURES: tuple[Fixture, ...] = (
    _w("GET", f"{R}/pulls?state=open", "read"),
    _w("GET", f"{API}/repos/search?q=app", "read", repo=None),
    _w("HEAD", f"{R}/contents/README.md", "read"),
    _w("POST", f"{API}/markdown", "read", {"Text": "# hi"}, repo=None, note="rendering stores nothing"),
    _w("POST", f"{R}/pulls", "pr.create", {"base": "main", "head": "feature", "title": "Fix"}),
    _w("POST", f"{R}/pulls/7/merge", "pr.merge", {"Do": "merge"}),
    _w("DELETE", f"{R}/pulls/7/merge", "pr.merge", note="cancelling a scheduled merge"),
    _w("PATCH", f"{R}/pulls/7", "pr.edit", {"title": "Fix, really"}),
    _w("PATCH", f"{R}/pulls/7", "pr.edit", {"base": "main"}, near_miss=True,
       note="a retarget is pr.edit whose new base [branches] judges as a write to it"),
    _w("POST", f"{R}/pulls/7/requested_reviewers", "pr.edit", {"reviewers": ["ann"]}),
    _w("POST", f"{R}/pulls/7/reviews", "pr.review", {"event": "APPROVED", "body": "lgtm"}),
    _w("POST", f"{R}/pulls/7/update", "pr.update_branch"),
    _w("POST", f"{R}/issues", "issue.create", {"title": "Crash"}),
    _w("PATCH", f"{R}/issues/3", "issue.edit", {"state": "closed"}),
    _w("POST", f"{R}/issues/3/comments", "issue.comment", {"body": "Reproduced"}),
    _w("PATCH", f"{R}/issues/comments/99", "issue.comment", {"body": "Reproduced twice"}),
    _w("POST", f"{R}/issues/3/labels", "label.add", {"labels": [1]}),
    _w("DELETE", f"{R}/issues/3/labels/1", "label.add"),
    _w("POST", f"{R}/issues/3/dependencies", "issue.relate", {"owner": "team", "repo": "app", "index": 1}),
    _w("POST", f"{R}/issues/3/assets", "attachment.link"),
    _w("POST", f"{R}/branches", "ref.write", {"new_branch_name": "topic", "old_ref_name": "main"}),
    _w("DELETE", f"{R}/branches/feature/nested/name", ("ref.write", "ref.delete"),
       note="branch names keep their slashes; a deletion is ref.delete"),
    _w("DELETE", f"{R}/tags/v1.0", ("ref.write", "ref.delete")),
    _w("POST", f"{R}/branch_protections", "branch.protect", {"rule_name": "main"}),
    _w("PUT", f"{R}/contents/docs/guide/intro.md", "contents.write", {"content": "aGk=", "sha": "abc"}),
    _w("POST", f"{R}/releases", "release.write", {"tag_name": "v1.0"}),
    _w("POST", f"{R}/forks", "repo.fork", {}),
    _w("POST", f"{API}/user/repos", "repo.create", {"name": "new"}, repo=None),
    _w("DELETE", R, "repo.delete"),
    _w("PATCH", R, "repo.admin", {"description": "An app"}),
    _w("POST", f"{R}/hooks", "repo.admin", {"type": "gitea", "config": {"url": "https://example.test"}}),
    _w("PUT", f"{R}/collaborators/ann", "repo.admin", {"permission": "write"}),
    _w("PUT", f"{R}/actions/secrets/DEPLOY_KEY", "secret.write", {"data": "x"}),
    _w("POST", f"{R}/actions/workflows/ci.yml/dispatches", "workflow.dispatch", {"ref": "main"}),
    _w("POST", f"{R}/labels", "label.manage", {"name": "bug", "color": "#ff0000"}, near_miss=True,
       note="a repository label is label.manage, not label.add"),
    _w("DELETE", f"{R}/issues/3/dependencies", "unknown", {"index": 1}, near_miss=True,
       note="unlinking is not issue.relate"),
    _w("DELETE", f"{R}/issues/3", "unknown", near_miss=True, note="deleting is not editing"),
    _w("PUT", f"{R}/pulls/7/merge", "unknown", near_miss=True, note="Gitea merges with POST; PUT is no route"),
    _w("POST", f"{R}/statuses/{_OID}", "unknown", {"state": "success"}, near_miss=True,
       note="a commit status is CI's to set"),
    _w("POST", f"{API}/admin/users", "unknown", {"username": "x"}, repo=None, near_miss=True,
       note="site administration"),
    Fixture("GET", f"{HOST}/team/app.git/info/refs?service=git-upload-pack", ("git.fetch",), repo="team/app"),
    Fixture("POST", f"{HOST}/team/app.git/git-upload-pack", ("git.fetch",),
            body=pkt(b"want " + _OID.encode() + b"\n") + b"0000", repo="team/app"),
    Fixture("POST", f"{HOST}/team/app.git/git-receive-pack", ("git.push",),
            body=push_body((ZERO_OID, _OID, "refs/heads/topic")), repo="team/app"),
    Fixture("POST", f"{HOST}/team/app.git/git-receive-pack", ("git.push", "ref.force"),
            body=push_body((_OID, "b" * 40, "refs/heads/main"), force=True), repo="team/app", note="not a fast-forward"),
    Fixture("POST", f"{HOST}/team/app.git/git-receive-pack", ("git.push", "ref.delete"),
            body=push_body((_OID, ZERO_OID, "refs/heads/old")), repo="team/app"),
    Fixture("GET", f"{HOST}/team/app/pulls", ("read",), note="the web UI, read"),
    Fixture("POST", f"{HOST}/team/app/pulls/7/merge", ("unknown",), body=b"_csrf=x&do=merge", near_miss=True,
            note="the web UI's merge form is not the API"),
)

FAIL_CLOSED: tuple[Fixture, ...] = (
    Fixture("POST", f"{R}/pulls/7/explode", ("unknown",), note="unmatched API route"),
    Fixture("POST", f"{API}/repos/team", ("unknown",), note="too short for a repository route"),
    Fixture("PATCH", f"{R}//pulls/7", ("unknown",), note="an empty segment"),
    Fixture("BREW", f"{R}/pulls", ("unknown",), note="not an HTTP method Gitea routes"),
    Fixture("POST", f"{HOST}/team/app.git/git-receive-pack", ("unknown",), body=b"zzzz garbage",
            note="unparseable push commands"),
    Fixture("POST", f"{HOST}/user/login", ("unknown",), body=b"user_name=x&password=y", note="a web form"),
)

_REASONS: dict[str, str] = {
    "auth.login": "Gitea's sign-in is the web UI's form or OAuth; API clients use tokens",
    "inference.call": "Gitea is not a model endpoint",
    "agent.session": "agent sessions are a Linear feature; Gitea has none",
    "gist.write": "Gitea has no gists or snippets",
}
_SUPPORTED = {op for f in FIXTURES + FAIL_CLOSED for op in f.operations}

UNSUPPORTED: Mapping[str, str] = {
    name: _REASONS.get(name, "not expressible on Gitea") for name in OPERATIONS if name not in _SUPPORTED
}
