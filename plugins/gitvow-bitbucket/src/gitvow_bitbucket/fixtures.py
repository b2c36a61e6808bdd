"""Wire examples of the ``bitbucket`` adapter for the contract kit: Cloud's API and git as clients
call them, and a Data Center instance at ``bitbucket.example.test`` (mapped in ``[hosts]``)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gitvow.request import ZERO_OID, Fixture
from gitvow_gitsmart.adapter import push_body

API = "https://api.bitbucket.org/2.0"
GIT = "https://bitbucket.org"
R = f"{API}/repositories/team/app"
PR = f"{R}/pullrequests/7"
#: A Data Center instance the policy maps to ``bitbucket`` (``[hosts] "bitbucket.example.test" = "bitbucket"``).
DC_HOST = "bitbucket.example.test"
DC = f"https://{DC_HOST}/rest/api/1.0/projects/PROJ/repos/app"
DPR = f"{DC}/pull-requests/7"
_JSON = {"content-type": "application/json"}
_OID = "c" * 40


def _w(method: str, url: str, operation: str | tuple[str, ...], payload: object | None = None, *,
       repo: str | None = "team/app", near_miss: bool = False, note: str = "") -> Fixture:
    body = json.dumps(payload).encode() if payload is not None else b""
    operations = (operation,) if isinstance(operation, str) else operation
    return Fixture(method, url, operations, body=body, headers=_JSON if body else {}, repo=repo,
                   near_miss=near_miss, note=note)


def _d(method: str, url: str, operation: str | tuple[str, ...], payload: object | None = None, *,
       near_miss: bool = False, note: str = "") -> Fixture:
    return _w(method, url, operation, payload, repo="PROJ/app", near_miss=near_miss, note=note)


_FORM = {"content-type": "application/x-www-form-urlencoded"}
_MULTIPART = {"content-type": "multipart/form-data; boundary=gitvow-fixture"}


def _multipart(*fields: tuple[str, str]) -> bytes:
    parts = [f'--gitvow-fixture\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
             for name, value in fields]
    return ("".join(parts) + "--gitvow-fixture--\r\n").encode()


FIXTURES: tuple[Fixture, ...] = (
    # -- Bitbucket Cloud, REST 2.0 -------------------------------------------------------
    _w("GET", f"{R}/pullrequests?state=OPEN", "read"),
    _w("GET", f"{API}/workspaces/team/projects", "read", repo=None),
    _w("POST", f"{R}/commits", "read", {"include": ["main"]}, note="lists commits: POST only to carry include/exclude"),
    _w("POST", f"{R}/pullrequests", "pr.create", {"title": "Fix", "source": {"branch": {"name": "fix"}}}),
    _w("PUT", PR, "pr.edit", {"title": "Fix, really"}),
    _w("POST", f"{PR}/decline", "pr.edit", near_miss=True, note="beside merge: closes the pull request unmerged"),
    _w("POST", f"{PR}/merge", "pr.merge", {"merge_strategy": "squash"}),
    _w("POST", f"{PR}/approve", "pr.review"),
    _w("POST", f"{PR}/request-changes", "pr.review"),
    _w("POST", f"{PR}/tasks", "pr.review", {"content": {"raw": "fix the test"}}),
    _w("POST", f"{PR}/comments", "issue.comment", {"content": {"raw": "looks good"}}),
    _w("POST", f"{PR}/comments", "pr.review", {"content": {"raw": "off by one"}, "inline": {"path": "a.py", "to": 3}},
       note="a comment on the diff"),
    _w("POST", f"{R}/issues", "issue.create", {"title": "Bug", "content": {"raw": "it breaks"}}),
    _w("PUT", f"{R}/issues/3", "issue.edit", {"state": "resolved"}),
    _w("POST", f"{R}/issues/3/comments", "issue.comment", {"content": {"raw": "+1"}}),
    _w("POST", f"{R}/issues/3/attachments", "attachment.link"),
    _w("POST", f"{R}/refs/branches", "ref.write", {"name": "feature", "target": {"hash": "main"}}),
    _w("POST", f"{R}/refs/branches", "ref.write", {"name": "main", "target": {"hash": "abc"}}, near_miss=True,
       note="creating a branch is ref.write whatever its name; [branches] judges the name"),
    _w("DELETE", f"{R}/refs/branches/feature/nested", ("ref.write", "ref.delete"), note="a deletion is ref.delete"),
    _w("DELETE", f"{R}/refs/tags/v1.0", ("ref.write", "ref.delete")),
    _w("PUT", PR, "pr.edit", {"destination": {"branch": {"name": "main"}}},
       note="a retarget: the new destination is judged by [branches] as a write to it"),
    _w("POST", f"{R}/branch-restrictions", "branch.protect", {"kind": "push", "pattern": "main"}),
    Fixture("POST", f"{R}/src", ("contents.write",), body=b"branch=agent%2Fx&message=m&%2Fsrc%2Fa.py=print%281%29",
            headers=_FORM, repo="team/app", note="commits files through the API (a form: each path is a field)"),
    Fixture("POST", f"{R}/src", ("contents.write",),
            body=_multipart(("branch", "agent/x"), ("files", "old.txt"), ("bitbucket-pipelines.yml", "pipelines: {}")),
            headers=_MULTIPART, repo="team/app", note="multipart; files lists a deletion"),
    Fixture("POST", f"{R}/src", ("contents.write",), body=b'{"branch": "main"}', headers=_JSON, repo="team/app",
            near_miss=True, note="JSON is not how Bitbucket reads a commit: contents.write, its change unestablished"),
    _w("POST", f"{R}/forks", "repo.fork", {"name": "app-fork"}),
    _w("POST", f"{API}/repositories/team/new-app", "repo.create", {"scm": "git"}, repo="team/new-app"),
    _w("DELETE", R, "repo.delete"),
    _w("PUT", R, "repo.admin", {"description": "the app"}),
    _w("POST", f"{R}/hooks", "repo.admin", {"url": "https://hooks.example.test"}),
    _w("PUT", f"{R}/permissions-config/users/%7Babc%7D", "repo.admin", {"permission": "write"}),
    _w("POST", f"{R}/downloads", "release.write"),
    _w("POST", f"{R}/pipelines", "workflow.dispatch", {"target": {"ref_name": "main"}}),
    _w("POST", f"{R}/pipelines_config/variables", "secret.write", {"key": "TOKEN", "secured": True}),
    _w("POST", f"{API}/workspaces/team/pipelines-config/variables", "secret.write", {"key": "K"}, repo=None),
    _w("POST", f"{API}/snippets/team", "gist.write", repo=None),
    # -- git on bitbucket.org --------------------------------------------------------------
    _w("GET", f"{GIT}/team/app.git/info/refs?service=git-upload-pack", "git.fetch"),
    _w("POST", f"{GIT}/team/app.git/git-upload-pack", "git.fetch", note="fetch negotiation"),
    Fixture("POST", f"{GIT}/team/app.git/git-receive-pack", ("git.push",),
            body=push_body((ZERO_OID, _OID, "refs/heads/feature")), repo="team/app"),
    Fixture("POST", f"{GIT}/team/app.git/git-receive-pack", ("git.push", "ref.force"),
            body=push_body((_OID, "b" * 40, "refs/heads/main"), force=True), repo="team/app", note="not a fast-forward"),
    Fixture("POST", f"{GIT}/team/app.git/git-receive-pack", ("git.push", "ref.delete"),
            body=push_body((_OID, ZERO_OID, "refs/heads/old")), repo="team/app"),
    _w("GET", f"{GIT}/team/app/pull-requests/7", "read", repo=None, note="the web UI"),
    # -- Bitbucket Data Center, REST 1.0 --------------------------------------------------
    _d("GET", f"{DPR}/activities", "read"),
    _d("GET", f"https://{DC_HOST}/rest/api/latest/projects/PROJ/repos/app/branches", "read"),
    _d("POST", f"{DC}/pull-requests", "pr.create", {"title": "Fix", "fromRef": {"id": "refs/heads/fix"}}),
    _d("PUT", DPR, "pr.edit", {"title": "Fix", "version": 1}),
    _d("POST", f"{DPR}/decline?version=1", "pr.edit", near_miss=True, note="beside merge: closes it unmerged"),
    _d("POST", f"{DPR}/merge?version=1", "pr.merge"),
    _d("POST", f"{DPR}/auto-merge", "pr.merge", note="arms auto-merge"),
    _d("POST", f"{DPR}/approve", "pr.review"),
    _d("POST", f"{DPR}/blocker-comments", "pr.review", {"text": "fix the test"}),
    _d("POST", f"{DPR}/comments", "issue.comment", {"text": "looks good"}),
    _d("POST", f"{DPR}/comments", "pr.review", {"text": "off by one", "anchor": {"path": "a.py", "line": 3}},
       note="a comment on the diff"),
    _d("POST", f"https://{DC_HOST}/rest/git/1.0/projects/PROJ/repos/app/pull-requests/7/rebase", "pr.update_branch"),
    _d("POST", f"https://{DC_HOST}/rest/branch-utils/1.0/projects/PROJ/repos/app/branches", "ref.write",
       {"name": "feature", "startPoint": "main"}),
    _d("DELETE", f"https://{DC_HOST}/rest/branch-utils/1.0/projects/PROJ/repos/app/branches",
       ("ref.write", "ref.delete"), {"name": "refs/heads/feature", "dryRun": False}),
    _d("POST", f"{DC}/branches", "ref.write", {"name": "feature", "startPoint": "refs/heads/main"}),
    _d("PUT", DPR, "pr.edit", {"version": 1, "toRef": {"id": "refs/heads/main"}}, note="a retarget, judged by [branches]"),
    _d("POST", f"https://{DC_HOST}/rest/git/1.0/projects/PROJ/repos/app/tags", "ref.write", {"name": "v1"}),
    _d("DELETE", f"https://{DC_HOST}/rest/git/1.0/projects/PROJ/repos/app/tags/v1", ("ref.write", "ref.delete")),
    _d("POST", f"https://{DC_HOST}/rest/branch-permissions/latest/projects/PROJ/repos/app/restrictions",
       "branch.protect", {"type": "read-only"}),
    Fixture("PUT", f"{DC}/browse/src/app.py", ("contents.write",), repo="PROJ/app", headers=_MULTIPART,
            body=_multipart(("branch", "agent/x"), ("message", "m"), ("content", "print(1)")),
            note="edits a file through the API (multipart)"),
    _d("POST", f"{DC}/labels", "label.manage", {"name": "backend"}),
    _d("POST", f"{DC}/attachments/5/metadata", "attachment.link"),
    _d("POST", DC, "repo.fork", {"name": "app-fork"}, note="Data Center forks by POSTing to the repository"),
    _d("DELETE", DC, "repo.delete"),
    _d("PUT", DC, "repo.admin", {"name": "app2"}),
    _d("PUT", f"{DC}/settings/pull-requests", "repo.admin", {"mergeConfig": {}}),
    _w("POST", f"https://{DC_HOST}/rest/api/1.0/projects/PROJ/repos", "repo.create", {"name": "new"}, repo=None),
    _d("PUT", f"https://{DC_HOST}/rest/access-tokens/1.0/projects/PROJ/repos/app", "secret.write", {"name": "ci"}),
    _w("GET", f"https://{DC_HOST}/scm/proj/app.git/info/refs?service=git-upload-pack", "git.fetch", repo="proj/app",
       note="git on Data Center, under /scm"),
    _w("POST", f"https://{DC_HOST}/rest/api/1.0/markup/preview", "read", {"text": "# hi"}, repo=None,
       note="rendering stores nothing"),
)

FAIL_CLOSED: tuple[Fixture, ...] = (
    Fixture("POST", f"{PR}/merge/now", ("unknown",), note="unmatched"),
    Fixture("POST", f"{R}/commit/{_OID}/statuses/build", ("unknown",), body=b'{"state":"SUCCESSFUL"}',
            note="build statuses are CI's"),
    Fixture("POST", f"{GIT}/site/oauth2/access_token", ("unknown",), body=b"grant_type=client_credentials",
            note="auth.login: not implemented"),
    Fixture("POST", f"{GIT}/team/app.git/git-receive-pack", ("unknown",), body=b"zzzz garbage",
            note="unreadable push commands"),
    Fixture("PUT", f"{R}/issues/3/watch", ("unknown",), note="watching is the user's"),
    Fixture("POST", f"https://{DC_HOST}/rest/api/1.0/admin/users", ("unknown",), note="instance administration"),
    Fixture("POST", f"https://{DC_HOST}/rest/api/3.5/projects/PROJ/repos/app/pull-requests", ("unknown",),
            note="an API version this adapter does not know"),
    Fixture("POST", f"{GIT}/team/app/pull-requests/new", ("unknown",), note="a web form: writes go through the API"),
)

UNSUPPORTED: Mapping[str, str] = {
    "label.add": "Bitbucket pull requests and Cloud issues carry no labels (issues have kind, priority, component)",
    "issue.relate": "Bitbucket's issue tracker has no issue links, sub-issues or projects",
    "agent.session": "Bitbucket has no agent-activity API",
    "inference.call": "Bitbucket serves no model endpoints",
}

NOT_IMPLEMENTED: Mapping[str, str] = {
    "auth.login": "OAuth token exchanges on bitbucket.org/site/oauth2 are not classified yet: denied as unknown",
}

#: What the proxy cannot do for an approval on this forge yet (Adapter.approval_unsupported): the
#: head is asked for again right before a merge is sent instead.
APPROVAL_UNSUPPORTED: Mapping[str, str] = {
    "pin": "Bitbucket's merge carries no expected head here (Data Center's `version` is the pull request's, "
           "not its head's): the proxy asks for the head right before it sends, and does not send when it cannot",
}
