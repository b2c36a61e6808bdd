"""Wire examples for the contract kit: one or more per operation, near misses, fail-closed cases.

Bodies are what python-gitlab and glab send (JSON); project paths appear URL-encoded as
GitLab requires (``group%2Fsub%2Fproj``), and one of each kind uses a numeric id, which
reports no repository.
"""

from __future__ import annotations

import json

from gitvow.request import Fixture
from gitvow_gitsmart.adapter import push_body

HOST = "https://gitlab.com"
API = f"{HOST}/api/v4"
P = f"{API}/projects/group%2Fsub%2Fproj"
REPO = "group/sub/proj"
GRAPHQL = f"{HOST}/api/graphql"
_JSON = {"content-type": "application/json"}
_OID_A = "a" * 40
_OID_B = "b" * 40


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def gql(query: str, variables: dict[str, object] | None = None) -> bytes:
    """A GraphQL-over-HTTP body."""
    return _json({"query": query, "variables": variables or {}})


def _rest(method: str, path: str, ops: tuple[str, ...], body: object = None, *, repo: str | None = REPO,
          near_miss: bool = False, note: str = "") -> Fixture:
    data = b"" if body is None else _json(body)
    return Fixture(method, f"{P}{path}" if repo == REPO else path, ops, body=data, headers=_JSON if data else {},
                   repo=repo, near_miss=near_miss, note=note)


def _graphql(query: str, ops: tuple[str, ...], variables: dict[str, object] | None = None, *,
             repo: str | None = None, near_miss: bool = False, note: str = "") -> Fixture:
    return Fixture("POST", GRAPHQL, ops, body=gql(query, variables), headers=_JSON, repo=repo,
                   near_miss=near_miss, note=note)


def fixtures() -> tuple[Fixture, ...]:
    git = f"{HOST}/group/sub/proj.git"
    return (
        # read
        _rest("GET", "/merge_requests/7", ("read",)),
        Fixture("GET", f"{API}/projects/42/issues", ("read",), note="numeric id: no repository"),
        _graphql("query { currentUser { username } }", ("read",)),
        Fixture("GET", f"{GRAPHQL}?query=%7BcurrentUser%7Bid%7D%7D", ("read",), note="GraphQL query over GET"),
        # sign-in
        Fixture("POST", f"{HOST}/oauth/token", ("auth.login",), body=b"grant_type=device_code",
                headers={"content-type": "application/x-www-form-urlencoded"}),
        # git smart-HTTP (delegated to gitsmart)
        Fixture("GET", f"{git}/info/refs?service=git-upload-pack", ("git.fetch",), repo=REPO),
        Fixture("POST", f"{git}/git-receive-pack", ("git.push",), body=push_body((_OID_A, _OID_B, "refs/heads/main")),
                repo=REPO),
        Fixture("POST", f"{git}/git-receive-pack", ("git.push", "ref.force"),
                body=push_body((_OID_A, _OID_B, "refs/heads/main"), force=True), repo=REPO, note="not a fast-forward"),
        Fixture("POST", f"{git}/git-receive-pack", ("git.push", "ref.delete"),
                body=push_body((_OID_A, "0" * 40, "refs/heads/old")), repo=REPO),
        # refs, protection, files
        _rest("POST", "/repository/branches", ("ref.write",), {"branch": "fix", "ref": "main"}),
        _rest("POST", "/repository/tags", ("ref.write",), {"tag_name": "v1", "ref": "main"}),
        _rest("POST", "/repository/commits", ("ref.write",), {"branch": "main", "commit_message": "m", "actions": []}),
        _rest("DELETE", "/repository/branches/feature%2Fx", ("ref.write", "ref.delete")),
        _rest("POST", "/protected_branches", ("branch.protect",), {"name": "main"}),
        _rest("POST", "/repository/files/docs%2FREADME.md", ("contents.write",),
              {"branch": "main", "content": "x", "commit_message": "m"}),
        # issues
        _rest("POST", "/issues", ("issue.create",), {"title": "t"}),
        _rest("PUT", "/issues/3", ("issue.edit",), {"state_event": "close"}),
        _rest("PUT", "/issues/3", ("label.add",), {"add_labels": "bug"}),
        _rest("PUT", "/issues/3", ("issue.edit", "label.add"), {"title": "t", "add_labels": "bug"}),
        _rest("POST", "/issues/3/notes", ("issue.comment",), {"body": "hi"}),
        _rest("POST", "/merge_requests/7/notes", ("issue.comment",), {"body": "hi"}),
        _rest("POST", "/issues/3/links", ("issue.relate",), {"target_project_id": 1, "target_issue_iid": 2}),
        _rest("POST", "/uploads", ("attachment.link",)),
        # merge requests
        _rest("POST", "/merge_requests", ("pr.create",), {"source_branch": "fix", "target_branch": "main", "title": "t"}),
        Fixture("POST", f"{API}/projects/42/merge_requests", ("pr.create",), body=_json({"title": "t"}), headers=_JSON,
                note="numeric id: no repository"),
        _rest("PUT", "/merge_requests/7", ("pr.edit",), {"title": "t"}),
        _rest("PUT", "/merge_requests/7", ("pr.edit",), {"target_branch": "main"}, near_miss=True,
              note="a retarget is pr.edit whose new base [branches] judges as a write to it"),
        _rest("POST", "/merge_requests/7/notes", ("issue.comment", "unknown"), {"body": "/target_branch main"},
              near_miss=True, note="the /target_branch quick action retargets unjudged: refused"),
        _rest("POST", "/merge_requests/7/approve", ("pr.review",)),
        _rest("POST", "/merge_requests/7/discussions", ("pr.review",),
              {"body": "nit", "position": {"position_type": "text", "new_line": 3}}),
        _rest("POST", "/merge_requests/7/discussions", ("issue.comment",), {"body": "general thread"}),
        _rest("PUT", "/merge_requests/7/rebase", ("pr.update_branch",)),
        _rest("PUT", "/merge_requests/7/merge", ("pr.merge",), {"squash": True}),
        _rest("POST", "/merge_trains/merge_requests/7", ("pr.merge",)),
        # dangerous classes, named
        Fixture("POST", f"{API}/projects", ("repo.create",), body=_json({"name": "x"}), headers=_JSON),
        _rest("DELETE", "", ("repo.delete",)),
        _rest("POST", "/fork", ("repo.fork",), {"namespace_path": "me"}),
        _rest("POST", "/hooks", ("repo.admin",), {"url": "https://example.invalid"}),
        _rest("POST", "/releases", ("release.write",), {"tag_name": "v1"}),
        _rest("POST", "/snippets", ("gist.write",), {"title": "s"}),
        _rest("POST", "/pipeline", ("workflow.dispatch",), {"ref": "main"}),
        _rest("POST", "/variables", ("secret.write",), {"key": "K", "value": "v"}),
        _rest("POST", "/labels", ("label.manage",), {"name": "bug", "color": "#ff0000"}),
        Fixture("POST", f"{API}/code_suggestions/completions", ("inference.call",), body=_json({}), headers=_JSON),
        # explicit unknowns
        _rest("DELETE", "/issues/3", ("unknown",), note="deleting an issue is not an agent operation"),
        Fixture("POST", f"{API}/users", ("unknown",), body=_json({}), headers=_JSON, note="user administration"),
        # GraphQL mutations
        _graphql("mutation($p: ID!) { mergeRequestCreate(input: {projectPath: $p, title: \"t\", sourceBranch: \"a\", "
                 "targetBranch: \"main\"}) { errors } }", ("pr.create",), {"p": REPO}, repo=REPO),
        _graphql("mutation { mergeRequestAccept(input: {projectPath: \"group/sub/proj\", iid: \"7\"}) { errors } }",
                 ("pr.merge",), repo=REPO),
        _graphql("mutation { mergeRequestUpdate(input: {projectPath: \"group/sub/proj\", iid: \"7\", title: \"t\"}) "
                 "{ errors } }", ("pr.edit",), repo=REPO),
        _graphql("mutation { mergeRequestUpdate(input: {projectPath: \"group/sub/proj\", iid: \"7\", "
                 "targetBranch: \"main\"}) { errors } }", ("pr.edit",), repo=REPO, near_miss=True,
                 note="a retarget: the new base is judged by [branches]"),
        _graphql("mutation { mergeRequestSetDraft(input: {projectPath: \"group/sub/proj\", iid: \"7\", draft: false}) "
                 "{ errors } }", ("pr.edit",), repo=REPO),
        _graphql("mutation { createIssue(input: {projectPath: \"group/sub/proj\", title: \"t\"}) { errors } }",
                 ("issue.create",), repo=REPO),
        _graphql("mutation { updateIssue(input: {projectPath: \"group/sub/proj\", iid: \"3\", title: \"t\"}) "
                 "{ errors } }", ("issue.edit",), repo=REPO),
        _graphql("mutation { createNote(input: {noteableId: \"gid://gitlab/Issue/1\", body: \"hi\"}) { errors } }",
                 ("issue.comment",)),
        _graphql("mutation M { a: createNote(input: {noteableId: \"gid://gitlab/Issue/1\", body: \"x\"}) { errors } "
                 "...F } fragment F on Mutation { mergeRequestAccept(input: {projectPath: \"g/p\", iid: \"1\"}) "
                 "{ errors } }", ("issue.comment", "pr.merge"), note="alias + fragment: both fields count"),
        # near misses
        _rest("POST", "/labels", ("label.manage",), {"name": "bug", "color": "#f00"}, near_miss=True,
              note="creates a project label: label.manage, not label.add (a near miss)"),
        Fixture("POST", f"{API}/groups/7/labels", ("label.manage",), body=_json({"name": "x", "color": "#f00"}),
                headers=_JSON, near_miss=True, note="group label"),
        _rest("PUT", "/merge_requests/7/merge_ref", ("ref.write",), near_miss=True,
              note="merge_ref writes refs/merge-requests/7/merge, it does not merge"),
        _rest("POST", "/merge_requests/7/cancel_merge_when_pipeline_succeeds", ("pr.edit",), near_miss=True,
              note="disarming auto-merge is not merging"),
        _rest("POST", "/merge_requests/7/merge", ("unknown",), near_miss=True, note="merge is PUT; POST is no route"),
        _rest("POST", "/issues/3/move", ("unknown",), {"to_project_id": 9}, near_miss=True,
              note="moving crosses projects"),
        Fixture("POST", f"{API}/projects/group/sub/proj/merge_requests", ("unknown",), body=_json({"title": "t"}),
                headers=_JSON, near_miss=True, note="unencoded project path is not a GitLab route"),
        _graphql("mutation { mergeRequestSetAssignees(input: {projectPath: \"group/sub/proj\", iid: \"7\", "
                 "assigneeUsernames: [\"a\"]}) { errors } }", ("pr.edit",), repo=REPO, near_miss=True,
                 note="mergeRequestSet* is pr.edit"),
        _graphql("mutation { destroyNote(input: {id: \"gid://gitlab/Note/1\"}) { errors } }", ("unknown",),
                 near_miss=True, note="unmapped mutation"),
        _graphql("mutation { createDiffNote(input: {noteableId: \"gid://gitlab/MergeRequest/1\", body: \"x\"}) "
                 "{ errors } }", ("unknown",), near_miss=True, note="only the issue's list of mutations is mapped"),
        Fixture("GET", f"{git}/info/refs?service=git-receive-pack", ("git.push",), repo=REPO, near_miss=True,
                note="a GET that announces a push"),
    )


def fail_closed_fixtures(body_limit: int) -> tuple[Fixture, ...]:
    padding = "x" * (body_limit + 1)
    return (
        Fixture("POST", GRAPHQL, ("unknown",), body=b"{not json", headers=_JSON, note="unparseable GraphQL body"),
        Fixture("POST", GRAPHQL, ("unknown",), body=gql("mutation { createIssue(input: {title: \"" + padding + "\"}) "
                                                          "{ errors } }"), headers=_JSON, note="over the body limit"),
        Fixture("POST", GRAPHQL, ("unknown",), body=gql("mutation {"), headers=_JSON, note="document does not parse"),
        Fixture("POST", GRAPHQL, ("unknown",), body=_json([{"query": "query { a }"}]), headers=_JSON, note="batch"),
        Fixture("POST", GRAPHQL, ("unknown",), body=_json({"query": "query { a }", "_json": [{"query": "mutation { b }"}]}),
                headers=_JSON, note="_json multiplex smuggled beside a query"),
        Fixture("POST", f"{GRAPHQL}?query=mutation%7BmergeRequestAccept%7Berrors%7D%7D", ("unknown",),
                body=gql("query { currentUser { id } }"), headers=_JSON, note="document in the URL of a POST"),
        Fixture("GET", f"{GRAPHQL}?query=mutation%7BcreateIssue%7Berrors%7D%7D", ("unknown",), note="mutation over GET"),
        Fixture("PUT", GRAPHQL, ("unknown",), body=gql("query { a }"), headers=_JSON, note="GraphQL takes GET or POST"),
        Fixture("POST", f"{API}/projects/1/no_such_thing", ("unknown",), body=b"{}", headers=_JSON, note="unmatched route"),
        Fixture("POST", f"{API}/projects/1/issues/3/notes", ("unknown",), body=b"{}",
                headers={**_JSON, "x-http-method-override": "DELETE"}, note="verb override"),
        Fixture("POST", f"{API}/projects/1/issues/3/notes", ("unknown",), body=b"_method=DELETE&body=x",
                headers={"content-type": "application/x-www-form-urlencoded"}, note="_method override"),
        Fixture("POST", f"{API}/projects/1/issues/3/../../merge_requests", ("unknown",), body=b"{}", headers=_JSON,
                note="dot segments"),
        Fixture("POST", f"{API}/projects/1/issues/%2e%2e/merge_requests", ("unknown",), body=b"{}", headers=_JSON,
                note="encoded dot segments"),
        Fixture("POST", f"{API}/projects//1/issues", ("unknown",), body=b"{}", headers=_JSON, note="empty segment"),
        Fixture("POST", f"{HOST}/group/sub/proj.git/git-receive-pack", ("unknown",), body=b"zzzz garbage",
                note="unreadable push commands"),
        Fixture("POST", f"{HOST}/group/sub/proj/-/merge_requests", ("unknown",), body=b"{}", headers=_JSON,
                note="web UI route"),
        Fixture("TRACE", f"{API}/projects", ("unknown",), note="unknown verb"),
    )
