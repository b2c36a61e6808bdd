"""The gate and the proxy's ``explain`` give the same operations, verdict and reason for the same action.

Each pair below is one action two ways: the tool call an agent makes (a shell command or an
MCP tool call) and the request(s) it sends on the wire. The gate judges the call (its forge
stage: the adapter's command or tool classifier, then the engine); ``gitvow explain`` judges
the request (the adapter's wire classifier, then the same engine). Every pair is judged for
every agent of :data:`POLICY` — several modes, a capability, per-repository autonomy — on
every adapter the gate can express: GitHub, GitLab, Gitea, Linear (MCP tools), Bitbucket
(``curl``, as it has no CLI) and git smart-HTTP. Requests on several repositories and requests whose repository is an opaque id
(unresolved) are among them.

A line with several commands is several requests: the gate's answer is the first refused
request's (operations, verdict, reason), or the union of the operations when all are allowed.
Behind the proxy (``GITVOW_AGENT`` and ``HTTPS_PROXY`` in the environment the gate is handed,
not in this process's), a request ``explain`` answers with the staged ``approval`` relay
goes on at the gate: the proxy stages it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

pytest.importorskip("gitvow_gate")
for _needed in ("gitvow_github", "gitvow_gitlab", "gitvow_gitea", "gitvow_linear", "gitvow_gitsmart", "gitvow_bitbucket"):
    pytest.importorskip(_needed)

from gitvow.cli.explain import explain  # noqa: E402
from gitvow.pipeline import Engine  # noqa: E402
from gitvow.plugins import installed  # noqa: E402
from gitvow.policy.load import load_policy  # noqa: E402
from gitvow.request import Request  # noqa: E402
from gitvow_gate import forge, gate_policy, shell  # noqa: E402
from gitvow_gate.call import GateCall  # noqa: E402
from gitvow_gitsmart.adapter import push_body  # noqa: E402

POLICY = """\
[hosts]
"gitea.example.test" = "gitea"

[relays.ship-it]
usage = "ship-it TAG"
what = "publishing a release"

[operations."release.write"]
relay = "ship-it"

[agents.advisory]
mode = "advisory"

[agents.issues]
mode = "issues_only"

[agents.prs]
mode = "issues_and_prs"

[agents.merge]
mode = "issues_prs_merge"

[agents.converse]
mode = "advisory"
capabilities = ["converse"]

[agents.auto]
mode = "issues_prs_merge"
autonomy = { "team/locked" = "advisory", "team/app" = "issues_and_prs" }

[agents.lifted]
mode = "issues_only"
autonomy = { "team/app" = "issues_prs_merge" }

[agents.fenced]
mode = "issues_and_prs"
branches = ["agent/**"]

[branches]
protected = ["release/*"]

[mcp.gitlab]
url = "https://gitlab-mcp.example.test/mcp"
tools = "gitlab"

[mcp.gitea]
url = "https://gitea-mcp.example.test/mcp"
tools = "gitea"
"""
AGENTS = ("advisory", "issues", "prs", "merge", "converse", "auto", "lifted", "fenced")

GH = "https://api.github.com"
GL = "https://gitlab.com/api/v4/projects"
GT = "https://gitea.example.test/api/v1/repos"
LIN = "https://api.linear.app/graphql"
BB = "https://api.bitbucket.org/2.0/repositories"

#: One wire request: method, URL and JSON body (None: no body).
Wire = tuple[str, str, Any]


def gql(document: str) -> dict[str, str]:
    return {"query": document}


#: (the tool call: ``shell LINE`` or ``mcp TOOL``, its MCP arguments, the request(s) it sends)
_OLD, _NEW = "a" * 40, "b" * 40


def _pushes() -> list[tuple[str, dict[str, Any], list[Wire]]]:
    """``git push`` command lines and the receive-pack requests they send (real packs: an
    update is a fast-forward of the old id unless forced, a deletion sends no pack)."""
    def wire(repo: str, *commands: tuple[str, str, str], force: bool = False) -> list[Wire]:
        sent: list[Wire] = [("POST", f"{repo}/git-receive-pack", push_body(*commands, force=force))]
        if force or any(new == "0" * 40 for _, new, _ in commands):
            return sent  # the advertisement is a plain git.push: a refusal names the pack's operations
        return [("GET", f"{repo}/info/refs?service=git-receive-pack", None), *sent]

    app, locked = "https://github.com/team/app.git", "https://gitlab.com/team/locked.git"
    gitlab = "https://gitlab.com/team/app.git"
    zero = "0" * 40
    return [
        (f"shell git push {app} main", {}, wire(app, (_OLD, _NEW, "refs/heads/main"))),
        (f"shell git push {locked} main", {}, wire(locked, (_OLD, _NEW, "refs/heads/main"))),
        (f"shell git push {app} agent/x", {}, wire(app, (_OLD, _NEW, "refs/heads/agent/x"))),
        (f"shell git push {app} HEAD:main", {}, wire(app, (_OLD, _NEW, "refs/heads/main"))),
        (f"shell git push {app} HEAD:release/1", {}, wire(app, (_OLD, _NEW, "refs/heads/release/1"))),
        (f"shell git push {app} refs/heads/agent/x:refs/heads/release/2", {},
         wire(app, (_OLD, _NEW, "refs/heads/release/2"))),
        (f"shell git push {app} agent/x:refs/tags/v1", {}, wire(app, (zero, _NEW, "refs/tags/v1"))),
        (f"shell git push {app} +agent/x", {}, wire(app, (_OLD, _NEW, "refs/heads/agent/x"), force=True)),
        (f"shell git push --force {app} agent/x", {}, wire(app, (_OLD, _NEW, "refs/heads/agent/x"), force=True)),
        (f"shell git push {app} :agent/old", {}, wire(app, (_OLD, zero, "refs/heads/agent/old"))),
        (f"shell git push --delete {app} agent/old", {}, wire(app, (_OLD, zero, "refs/heads/agent/old"))),
        (f"shell git push -o ci.skip {app} agent/x release/3", {},
         wire(app, (_OLD, _NEW, "refs/heads/agent/x"), (_OLD, _NEW, "refs/heads/release/3"))),
        # push options GitLab acts on: a merge request opened, and merged when its pipeline passes
        (f"shell git push -o merge_request.create {gitlab} agent/x", {},
         [("POST", f"{gitlab}/git-receive-pack", _optioned("merge_request.create"))]),
        (f"shell git push -o merge_request.create -o merge_request.merge_when_pipeline_succeeds {gitlab} agent/x",
         {}, [("POST", f"{gitlab}/git-receive-pack",
               _optioned("merge_request.create", "merge_request.merge_when_pipeline_succeeds"))]),
        (f"shell git push -o ci.variable=X=1 {gitlab} agent/x", {},
         [("POST", f"{gitlab}/git-receive-pack", _optioned("ci.variable=X=1"))]),
    ]


def _optioned(*options: str) -> bytes:
    """A receive-pack body with push options, as git sends it after ``push-options`` was named."""
    body = push_body((_OLD, _NEW, "refs/heads/agent/x"))
    commands, _, packed = body.partition(b"0000")
    commands = commands.replace(b"report-status", b"report-status push-options", 1)
    length = int(commands[:4], 16) + len(b" push-options")
    commands = b"%04x" % length + commands[4:]
    lines = b"".join(b"%04x" % (len(o) + 5) + o.encode() + b"\n" for o in options)
    return commands + b"0000" + lines + b"0000" + packed


PAIRS: list[tuple[str, Mapping[str, Any], list[Wire]]] = [
    # GitHub: gh, gh api, the GitHub MCP server
    # (without --head the head is the checkout's branch, which the gate does not read: one the
    # fenced agent may write; the proxy reads it from the request)
    ("shell gh pr create -R team/app --title t --body b", {},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "body": "b", "head": "agent/x", "base": "main"})]),
    ("shell gh pr create -R team/app --title t --body b --head x", {},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "body": "b", "head": "x", "base": "main"})]),
    ("shell gh pr create -R team/app --title t --body b -H team:agent/x", {},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "body": "b", "head": "team:agent/x", "base": "main"})]),
    ("shell gh pr create -R team/app --title t --body b --head=agent/x --head x", {},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "body": "b", "head": "x", "base": "main"})]),
    ("shell gh pr merge 3 -R team/app", {}, [("PUT", f"{GH}/repos/team/app/pulls/3/merge", None)]),
    ("shell gh pr merge 3 -R team/locked", {}, [("PUT", f"{GH}/repos/team/locked/pulls/3/merge", None)]),
    ("shell gh pr review 3 -R team/app --approve", {},
     [("POST", f"{GH}/repos/team/app/pulls/3/reviews", {"event": "APPROVE"})]),
    ("shell gh pr comment 3 -R team/locked --body x", {},
     [("POST", f"{GH}/repos/team/locked/issues/3/comments", {"body": "x"})]),
    ("shell gh pr edit 3 -R team/app --title x", {}, [("PATCH", f"{GH}/repos/team/app/pulls/3", {"title": "x"})]),
    ("shell gh pr update-branch 3 -R team/app", {}, [("PUT", f"{GH}/repos/team/app/pulls/3/update-branch", None)]),
    ("shell gh pr list -R team/app", {}, [("GET", f"{GH}/repos/team/app/pulls", None)]),
    ("shell gh issue create -R team/app --title t --body b", {},
     [("POST", f"{GH}/repos/team/app/issues", {"title": "t", "body": "b"})]),
    ("shell gh issue comment 3 -R team/app --body x", {},
     [("POST", f"{GH}/repos/team/app/issues/3/comments", {"body": "x"})]),
    ("shell gh label create bug -R team/app", {}, [("POST", f"{GH}/repos/team/app/labels", {"name": "bug"})]),
    ("shell gh repo delete team/app --yes", {}, [("DELETE", f"{GH}/repos/team/app", None)]),
    ("shell gh repo fork team/other", {}, [("POST", f"{GH}/repos/team/other/forks", None)]),
    ("shell gh release create v1 -R team/app", {}, [("POST", f"{GH}/repos/team/app/releases", {"tag_name": "v1"})]),
    ("shell gh workflow run ci.yml -R team/app", {},
     [("POST", f"{GH}/repos/team/app/actions/workflows/ci.yml/dispatches", {"ref": "main"})]),
    ("shell gh api repos/team/locked/pulls/3/merge -X PUT", {},
     [("PUT", f"{GH}/repos/team/locked/pulls/3/merge", None)]),
    ("shell gh api repos/team/app/issues -f title=t -f body=b", {},
     [("POST", f"{GH}/repos/team/app/issues", {"title": "t", "body": "b"})]),
    ("shell gh repo view team/app", {}, [("GET", f"{GH}/repos/team/app", None)]),
    # unresolved: GraphQL names the pull request and the issue by node id only
    ("shell gh api graphql -f query='mutation { mergePullRequest(input: {pullRequestId: \"PR_1\"}) { clientMutationId } }'",
     {}, [("POST", f"{GH}/graphql", gql('mutation { mergePullRequest(input: {pullRequestId: "PR_1"}) { clientMutationId } }'))]),
    ("shell gh api graphql -f query='mutation { addComment(input: {subjectId: \"I_1\", body: \"x\"}) { clientMutationId } }'",
     {}, [("POST", f"{GH}/graphql", gql('mutation { addComment(input: {subjectId: "I_1", body: "x"}) { clientMutationId } }'))]),
    # two commands, two requests, two repositories
    ("shell gh issue comment 1 -R team/app --body x && gh pr merge 3 -R team/locked", {},
     [("POST", f"{GH}/repos/team/app/issues/1/comments", {"body": "x"}),
      ("PUT", f"{GH}/repos/team/locked/pulls/3/merge", None)]),
    ("shell gh issue create -R team/other --title t --body b; gh pr edit 3 -R team/app --title x", {},
     [("POST", f"{GH}/repos/team/other/issues", {"title": "t", "body": "b"}),
      ("PATCH", f"{GH}/repos/team/app/pulls/3", {"title": "x"})]),
    ("mcp mcp__github__create_pull_request", {"owner": "team", "repo": "app", "title": "t", "head": "x", "base": "main"},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "head": "x", "base": "main"})]),
    ("mcp mcp__github__create_pull_request", {"owner": "team", "repo": "app", "title": "t", "head": "agent/x",
                                              "base": "main"},
     [("POST", f"{GH}/repos/team/app/pulls", {"title": "t", "head": "agent/x", "base": "main"})]),
    ("mcp mcp__github__merge_pull_request", {"owner": "team", "repo": "locked", "pullNumber": 3},
     [("PUT", f"{GH}/repos/team/locked/pulls/3/merge", None)]),
    ("mcp mcp__github__add_issue_comment", {"owner": "team", "repo": "app", "issue_number": 3, "body": "x"},
     [("POST", f"{GH}/repos/team/app/issues/3/comments", {"body": "x"})]),
    ("mcp mcp__github__create_issue", {"owner": "team", "repo": "other", "title": "t", "body": "b"},
     [("POST", f"{GH}/repos/team/other/issues", {"title": "t", "body": "b"})]),
    ("mcp mcp__github__get_issue", {"owner": "team", "repo": "app", "issue_number": 3},
     [("GET", f"{GH}/repos/team/app/issues/3", None)]),
    ("mcp mcp__github__delete_file", {"owner": "team", "repo": "app", "path": "a"},
     [("DELETE", f"{GH}/repos/team/app/contents/a", {"message": "m", "sha": "1"})]),
    ("mcp mcp__github__create_branch", {"owner": "team", "repo": "app", "branch": "b"},
     [("POST", f"{GH}/repos/team/app/git/refs", {"ref": "refs/heads/b", "sha": "1"})]),
    ("mcp mcp__github__create_branch", {"owner": "team", "repo": "app", "branch": "agent/b"},
     [("POST", f"{GH}/repos/team/app/git/refs", {"ref": "refs/heads/agent/b", "sha": "1"})]),
    ("mcp mcp__github__create_branch", {"owner": "team", "repo": "app", "branch": "release/9"},
     [("POST", f"{GH}/repos/team/app/git/refs", {"ref": "refs/heads/release/9", "sha": "1"})]),
    ("mcp mcp__github__create_or_update_file", {"owner": "team", "repo": "app", "path": "src/a.py", "content": "x",
                                                "message": "m", "branch": "agent/b"},
     [("PUT", f"{GH}/repos/team/app/contents/src/a.py", {"message": "m", "content": "eA==", "branch": "agent/b"})]),
    ("mcp mcp__github__create_or_update_file", {"owner": "team", "repo": "app", "path": "src/a.py", "content": "x",
                                                "message": "m", "branch": "x"},
     [("PUT", f"{GH}/repos/team/app/contents/src/a.py", {"message": "m", "content": "eA==", "branch": "x"})]),
    ("mcp mcp__github__create_or_update_file", {"owner": "team", "repo": "app", "path": ".github/workflows/ci.yml",
                                                "content": "x", "message": "m", "branch": "agent/b"},
     [("PUT", f"{GH}/repos/team/app/contents/.github/workflows/ci.yml",
       {"message": "m", "content": "eA==", "branch": "agent/b"})]),
    # MCP writes carry the change of the REST writes the server sends for them
    ("mcp mcp__github__push_files", {"owner": "team", "repo": "app", "branch": "release/1", "message": "m",
                                     "files": [{"path": "src/a.py", "content": "x"}]},
     [("POST", f"{GH}/repos/team/app/git/trees", {"tree": [{"path": "src/a.py", "mode": "100644", "type": "blob",
                                                            "content": "x"}]}),
      ("POST", f"{GH}/repos/team/app/git/commits", {"message": "m", "tree": "1", "parents": ["2"]}),
      ("PATCH", f"{GH}/repos/team/app/git/refs/heads/release/1", {"sha": "3", "force": False})]),
    ("mcp mcp__github__push_files", {"owner": "team", "repo": "app", "branch": "agent/b", "message": "m",
                                     "files": [{"path": ".github/workflows/ci.yml", "content": "on: push"}]},
     [("POST", f"{GH}/repos/team/app/git/trees", {"tree": [{"path": ".github/workflows/ci.yml", "mode": "100644",
                                                            "type": "blob", "content": "on: push"}]}),
      ("POST", f"{GH}/repos/team/app/git/commits", {"message": "m", "tree": "1", "parents": ["2"]}),
      ("PATCH", f"{GH}/repos/team/app/git/refs/heads/agent/b", {"sha": "3", "force": False})]),
    ("mcp mcp__github__delete_branch", {"owner": "team", "repo": "app", "branch": "agent/b"},
     [("DELETE", f"{GH}/repos/team/app/git/refs/heads/agent/b", None)]),
    ("mcp mcp__github__update_pull_request", {"owner": "team", "repo": "app", "pullNumber": 3, "base": "release/1"},
     [("PATCH", f"{GH}/repos/team/app/pulls/3", {"base": "release/1"})]),
    ("mcp mcp__github__update_pull_request", {"owner": "team", "repo": "app", "pullNumber": 3, "title": "x"},
     [("PATCH", f"{GH}/repos/team/app/pulls/3", {"title": "x"})]),
    ("mcp mcp__github__create_pull_request_review", {"owner": "team", "repo": "app", "pullNumber": 3, "event": "APPROVE"},
     [("POST", f"{GH}/repos/team/app/pulls/3/reviews", {"event": "APPROVE"})]),
    # GitLab: glab, glab api, GitLab MCP servers (execute_graphql carries a document)
    ("shell glab mr create -R team/app --title t", {},
     [("POST", f"{GL}/team%2Fapp/merge_requests", {"title": "t", "source_branch": "agent/x", "target_branch": "main"})]),
    ("shell glab mr merge 3 -R team/locked", {}, [("PUT", f"{GL}/team%2Flocked/merge_requests/3/merge", None)]),
    ("shell glab mr approve 3 -R team/app", {}, [("POST", f"{GL}/team%2Fapp/merge_requests/3/approve", None)]),
    ("shell glab mr note 3 -R team/app -m x", {}, [("POST", f"{GL}/team%2Fapp/merge_requests/3/notes", {"body": "x"})]),
    ("shell glab issue create -R team/app --title t --description d", {},
     [("POST", f"{GL}/team%2Fapp/issues", {"title": "t", "description": "d"})]),
    ("shell glab issue note 3 -R team/locked -m x", {}, [("POST", f"{GL}/team%2Flocked/issues/3/notes", {"body": "x"})]),
    ("shell glab mr list -R team/app", {}, [("GET", f"{GL}/team%2Fapp/merge_requests", None)]),
    ("shell glab release create v1 -R team/app", {}, [("POST", f"{GL}/team%2Fapp/releases", {"tag_name": "v1"})]),
    ("shell glab repo delete team/app", {}, [("DELETE", f"{GL}/team%2Fapp", None)]),
    ("shell glab ci run -R team/app", {}, [("POST", f"{GL}/team%2Fapp/pipeline", {"ref": "main"})]),
    ("shell glab mr update 3 -R team/app --title x", {}, [("PUT", f"{GL}/team%2Fapp/merge_requests/3", {"title": "x"})]),
    ("shell glab api projects/team%2Fapp/merge_requests/3/merge -X PUT", {},
     [("PUT", f"{GL}/team%2Fapp/merge_requests/3/merge", None)]),
    ("mcp mcp__gitlab__create_merge_request", {"project_id": "team/app", "title": "t"},
     [("POST", f"{GL}/team%2Fapp/merge_requests", {"title": "t", "source_branch": "agent/x", "target_branch": "main"})]),
    ("mcp mcp__gitlab__merge_merge_request", {"project_id": "team/app", "merge_request_iid": 3},
     [("PUT", f"{GL}/team%2Fapp/merge_requests/3/merge", None)]),
    ("mcp mcp__gitlab__create_issue_note", {"project_id": "team/locked", "issue_iid": 3, "body": "x"},
     [("POST", f"{GL}/team%2Flocked/issues/3/notes", {"body": "x"})]),
    ("mcp mcp__gitlab__create_branch", {"project_id": "team/app", "branch": "b", "ref": "main"},
     [("POST", f"{GL}/team%2Fapp/repository/branches", {"branch": "b", "ref": "main"})]),
    ("mcp mcp__gitlab__create_branch", {"project_id": "team/app", "branch": "agent/b", "ref": "main"},
     [("POST", f"{GL}/team%2Fapp/repository/branches", {"branch": "agent/b", "ref": "main"})]),
    ("mcp mcp__gitlab__create_branch", {"project_id": "team/app", "branch": "release/1", "ref": "main"},
     [("POST", f"{GL}/team%2Fapp/repository/branches", {"branch": "release/1", "ref": "main"})]),
    ("mcp mcp__gitlab__push_files", {"project_id": "team/app", "branch": "release/1", "commit_message": "m",
                                     "files": [{"file_path": "src/a.py", "content": "x"}]},
     [("POST", f"{GL}/team%2Fapp/repository/commits",
       {"branch": "release/1", "commit_message": "m", "actions": [{"action": "create", "file_path": "src/a.py",
                                                                   "content": "x"}]})]),
    ("mcp mcp__gitlab__delete_branch", {"project_id": "team/app", "branch": "agent/b"},
     [("DELETE", f"{GL}/team%2Fapp/repository/branches/agent%2Fb", None)]),
    ("mcp mcp__gitlab__fork_repository", {"project_id": "team/app"}, [("POST", f"{GL}/team%2Fapp/fork", None)]),
    ("mcp mcp__gitlab__get_issue", {"project_id": "team/app", "issue_iid": 3}, [("GET", f"{GL}/team%2Fapp/issues/3", None)]),
    # one document, two repositories
    ("mcp mcp__gitlab__execute_graphql",
     {"query": 'mutation { mergeRequestAccept(input: {projectPath: "team/app", iid: "3"}) { errors } '
               'createIssue(input: {projectPath: "team/locked", title: "t"}) { errors } }'},
     [("POST", "https://gitlab.com/api/graphql",
       gql('mutation { mergeRequestAccept(input: {projectPath: "team/app", iid: "3"}) { errors } '
           'createIssue(input: {projectPath: "team/locked", title: "t"}) { errors } }'))]),
    ("mcp mcp__gitlab__execute_graphql",
     {"query": 'mutation { createIssue(input: {projectPath: "team/app", title: "t"}) { errors } '
               'createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) { errors } }'},
     [("POST", "https://gitlab.com/api/graphql",
       gql('mutation { createIssue(input: {projectPath: "team/app", title: "t"}) { errors } '
           'createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) { errors } }'))]),
    # unresolved: the note's issue is a global id only
    ("mcp mcp__gitlab__execute_graphql",
     {"query": 'mutation { createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) { errors } }'},
     [("POST", "https://gitlab.com/api/graphql",
       gql('mutation { createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) { errors } }'))]),
    # Gitea / Forgejo: tea and the Gitea MCP server
    ("shell tea pr create --repo team/app --title t", {},
     [("POST", f"{GT}/team/app/pulls", {"title": "t", "head": "agent/x", "base": "main"})]),
    ("shell tea pr merge 3 --repo team/locked", {}, [("POST", f"{GT}/team/locked/pulls/3/merge", {"Do": "merge"})]),
    ("shell tea pr approve 3 --repo team/app", {}, [("POST", f"{GT}/team/app/pulls/3/reviews", {"event": "APPROVED"})]),
    ("shell tea issue create --repo team/app --title t", {}, [("POST", f"{GT}/team/app/issues", {"title": "t"})]),
    ("shell tea comment 3 x --repo team/app", {}, [("POST", f"{GT}/team/app/issues/3/comments", {"body": "x"})]),
    ("shell tea issue list --repo team/app", {}, [("GET", f"{GT}/team/app/issues", None)]),
    ("shell tea release create --repo team/app --tag v1", {}, [("POST", f"{GT}/team/app/releases", {"tag_name": "v1"})]),
    ("shell tea label create --repo team/app --name bug", {},
     [("POST", f"{GT}/team/app/labels", {"name": "bug", "color": "#f00"})]),
    ("shell tea pr close 3 --repo team/app", {}, [("PATCH", f"{GT}/team/app/pulls/3", {"state": "closed"})]),
    ("mcp mcp__gitea__create_pull_request", {"owner": "team", "repo": "app", "title": "t"},
     [("POST", f"{GT}/team/app/pulls", {"title": "t", "head": "agent/x", "base": "main"})]),
    ("mcp mcp__gitea__merge_pull_request", {"owner": "team", "repo": "app", "index": 3},
     [("POST", f"{GT}/team/app/pulls/3/merge", {"Do": "merge"})]),
    ("mcp mcp__gitea__create_issue", {"owner": "team", "repo": "locked", "title": "t"},
     [("POST", f"{GT}/team/locked/issues", {"title": "t"})]),
    ("mcp mcp__gitea__create_issue_comment", {"owner": "team", "repo": "app", "index": 3, "body": "x"},
     [("POST", f"{GT}/team/app/issues/3/comments", {"body": "x"})]),
    ("mcp mcp__gitea__create_branch", {"owner": "team", "repo": "app", "branch": "b"},
     [("POST", f"{GT}/team/app/branches", {"new_branch_name": "b"})]),
    ("mcp mcp__gitea__create_branch", {"owner": "team", "repo": "app", "branch": "agent/b"},
     [("POST", f"{GT}/team/app/branches", {"new_branch_name": "agent/b"})]),
    ("mcp mcp__gitea__create_file", {"owner": "team", "repo": "app", "filepath": "a"},
     [("POST", f"{GT}/team/app/contents/a", {"content": "eA=="})]),
    ("mcp mcp__gitea__update_file", {"owner": "team", "repo": "app", "filepath": ".gitea/workflows/ci.yml",
                                     "content": "x", "branch_name": "agent/b", "sha": "1"},
     [("PUT", f"{GT}/team/app/contents/.gitea/workflows/ci.yml", {"content": "eA==", "branch": "agent/b", "sha": "1"})]),
    ("mcp mcp__gitea__delete_branch", {"owner": "team", "repo": "app", "branch": "agent/b"},
     [("DELETE", f"{GT}/team/app/branches/agent/b", None)]),
    ("mcp mcp__gitea__get_issue_by_index", {"owner": "team", "repo": "app", "index": 3},
     [("GET", f"{GT}/team/app/issues/3", None)]),
    # Linear: its MCP server's tools and the GraphQL the server sends
    ("mcp mcp__linear__create_issue", {"teamId": "T", "title": "t"},
     [("POST", LIN, gql('mutation { issueCreate(input: {teamId: "T", title: "t"}) { success } }'))]),
    ("mcp mcp__linear__create_issue", {"teamId": "T", "title": "t", "parentId": "P"},
     [("POST", LIN, gql('mutation { issueCreate(input: {teamId: "T", title: "t", parentId: "P"}) { success } }'))]),
    ("mcp mcp__linear__update_issue", {"id": "I", "title": "t"},
     [("POST", LIN, gql('mutation { issueUpdate(id: "I", input: {title: "t"}) { success } }'))]),
    ("mcp mcp__linear__create_comment", {"issueId": "I", "body": "x"},
     [("POST", LIN, gql('mutation { commentCreate(input: {issueId: "I", body: "x"}) { success } }'))]),
    ("mcp mcp__linear__create_project", {"name": "p", "teamIds": ["T"]},
     [("POST", LIN, gql('mutation { projectCreate(input: {name: "p", teamIds: ["T"]}) { success } }'))]),
    ("mcp mcp__linear__create_document", {"title": "d"},
     [("POST", LIN, gql('mutation { documentCreate(input: {title: "d"}) { success } }'))]),
    ("mcp mcp__linear__list_issues", {}, [("POST", LIN, gql("query { issues { nodes { id } } }"))]),
    # Bitbucket Cloud: curl at the gate (Bitbucket has no CLI), REST 2.0 on the wire
    ("shell curl -X POST https://api.bitbucket.org/2.0/repositories/team/app/pullrequests -d '{\"title\":\"t\"}'", {},
     [("POST", f"{BB}/team/app/pullrequests", {"title": "t"})]),
    ("shell curl -X POST https://api.bitbucket.org/2.0/repositories/team/app/pullrequests/3/merge", {},
     [("POST", f"{BB}/team/app/pullrequests/3/merge", None)]),
    ("shell curl https://api.bitbucket.org/2.0/repositories/team/app/pullrequests", {},
     [("GET", f"{BB}/team/app/pullrequests", None)]),
    ("shell curl -X POST https://api.bitbucket.org/2.0/repositories/team/locked/pullrequests/3/comments "
     "-d '{\"content\":{\"raw\":\"x\"}}'", {},
     [("POST", f"{BB}/team/locked/pullrequests/3/comments", {"content": {"raw": "x"}})]),
    ("shell curl -X DELETE https://api.bitbucket.org/2.0/repositories/team/app", {},
     [("DELETE", f"{BB}/team/app", None)]),
    ("shell curl -X POST https://api.bitbucket.org/2.0/repositories/team/app/issues -d '{\"title\":\"t\"}'", {},
     [("POST", f"{BB}/team/app/issues", {"title": "t"})]),
    # git smart-HTTP: a remote given as a URL names its repository; a push's first request
    # git smart-HTTP: a remote given as a URL names its repository; a push is the advertisement,
    # then the commands and pack, whose ref updates the gate reads from the refspecs
    *_pushes(),
    ("shell git fetch https://github.com/team/app.git", {},
     [("GET", "https://github.com/team/app.git/info/refs?service=git-upload-pack", None)]),
    ("shell git clone https://gitea.example.test/team/other.git", {},
     [("GET", "https://gitea.example.test/team/other.git/info/refs?service=git-upload-pack", None)]),
]

#: Cases: every pair for every agent.
CASES = [(agent, action, arguments, wire) for action, arguments, wire in PAIRS for agent in AGENTS]
_IDS = [f"{agent}: {action[:70]}" for agent, action, _, _ in CASES]


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> tuple[Engine, gate_policy.GatePolicy, dict[str, str]]:
    root = tmp_path_factory.mktemp("agreement")
    path = root / "policy.toml"
    path.write_text(POLICY)
    env = {"HOME": str(root), "GITVOW_CACHE_DIR": str(root / "cache"), "PATH": os.environ.get("PATH", "")}
    plugins = installed()
    engine = Engine(load_policy(path, relays=plugins.relays, sections=plugins.sections, absent="skip",
                                adapters=plugins.adapters), plugins)
    return engine, gate_policy.load_file(str(path), env=env), env


def request(method: str, url: str, body: Any) -> Request:
    if body is None:
        return Request.from_url(method, url)
    if isinstance(body, bytes):
        return Request.from_url(method, url, headers={"content-type": "application/x-git-receive-pack-request"},
                                body=body)
    return Request.from_url(method, url, headers={"content-type": "application/json"}, body=json.dumps(body).encode())


def explained(engine: Engine, agent: str, wire: Sequence[Wire]) -> dict[str, Any]:
    """What the proxy says of the requests, as one answer: the first refusal, else the union."""
    grant = engine.policy.grant_for(agent)
    assert grant is not None
    operations: list[str] = []
    for method, url, body in wire:
        answer = explain(engine, request(method, url, body), grant, agent)
        assert answer["verdict"] != "tunnel", url
        if answer["verdict"] != "allow":
            return {"operations": answer["operations"], "verdict": answer["verdict"], "reason": answer["reason"],
                    "relay": answer["relay"]}
        operations.extend(answer["operations"])
    return {"operations": list(dict.fromkeys(operations)), "verdict": "allow", "reason": None, "relay": None}


def gated(policy: gate_policy.GatePolicy, agent: str, action: str, arguments: Mapping[str, Any],
          env: Mapping[str, str]) -> forge.ForgeVerdict:
    kind, what = action.split(" ", 1)
    if kind == "mcp":
        call, commands = GateCall.mcp(what, arguments, "/nonexistent"), None
    else:
        call = GateCall.shell(what, "/nonexistent")
        commands = shell.commands(what)
    assert forge.may_be_forge(call, commands)
    return forge.evaluate(call, commands, agent, policy, env)


@pytest.mark.parametrize(("agent", "action", "arguments", "wire"), CASES, ids=_IDS)
def test_the_gate_and_explain_agree(setting: tuple[Engine, gate_policy.GatePolicy, dict[str, str]], agent: str,
                                    action: str, arguments: Mapping[str, Any], wire: list[Wire]) -> None:
    engine, policy, env = setting
    proxy = explained(engine, agent, wire)
    gate = gated(policy, agent, action, arguments, env)
    assert {"operations": list(gate.operations), "verdict": gate.outcome, "reason": gate.code} == {
        "operations": proxy["operations"], "verdict": proxy["verdict"], "reason": proxy["reason"]}
    if not gate.allowed:
        assert gate.message.endswith(f"reason={proxy['reason']}")
    # behind the proxy, in the environment the gate is handed: a request the proxy stages goes on
    proxied = {**env, "GITVOW_AGENT": agent, "HTTPS_PROXY": "http://127.0.0.1:9"}
    assert "HTTPS_PROXY" not in os.environ and "GITVOW_AGENT" not in os.environ
    behind = gated(policy, agent, action, arguments, proxied)
    staged = proxy["verdict"] == "relay" and proxy["relay"] == "approval"
    assert behind.allowed == (gate.allowed or staged), (behind, proxy)


def test_the_corpus_is_large_and_covers_every_adapter(setting: tuple[Engine, gate_policy.GatePolicy,
                                                                     dict[str, str]]) -> None:
    engine, _, _ = setting
    assert len(CASES) >= 200
    served = {engine.hosts.lookup(request(m, u, b).host, request(m, u, b).port).name  # type: ignore[union-attr]
              for _, _, wire in PAIRS for m, u, b in wire}
    assert {"github", "gitlab", "gitea", "linear", "bitbucket"} <= served
    assert any(action.startswith("shell git ") for action, _, _ in PAIRS)  # gitsmart, at the gate
    verdicts = {explained(engine, agent, wire)["verdict"] for agent, _, _, wire in CASES}
    assert verdicts == {"allow", "deny", "relay"}
    reasons = {explained(engine, agent, wire)["reason"] for agent, _, _, wire in CASES}
    assert {"mode_denied", "hard_deny", "repo_unresolved", "linear_policy", "branch_not_allowed", "branch_protected",
            "ref_force", "ref_delete"} <= reasons


#: Where each forge's MCP server is served in :data:`POLICY` (GitHub's is built in).
MCP_URLS = {"github": "https://api.githubcopilot.com/mcp/", "gitlab": "https://gitlab-mcp.example.test/mcp",
            "gitea": "https://gitea-mcp.example.test/mcp"}
#: The tool tables' own calls. A tool that carries a GraphQL document (``execute_graphql``) or
#: Linear's are left out: the endpoint does not pass on their own reason codes (``graphql_*``,
#: ``linear_policy``) or node-id targets yet, so their refusal reads ``mode_denied`` there.
MCP_CASES = [(agent, action, arguments) for agent, action, arguments, _ in CASES
             if action.startswith(("mcp mcp__github__", "mcp mcp__gitea__", "mcp mcp__gitlab__"))
             and not action.endswith("execute_graphql")]


@pytest.mark.parametrize(("agent", "action", "arguments"), MCP_CASES,
                         ids=[f"{agent}: {action[4:70]}" for agent, action, _ in MCP_CASES])
def test_the_gate_and_the_proxys_mcp_endpoint_agree(setting: tuple[Engine, gate_policy.GatePolicy, dict[str, str]],
                                                    agent: str, action: str, arguments: Mapping[str, Any]) -> None:
    """The same MCP tool call, judged by the gate and by the proxy as the JSON-RPC request the
    agent's client sends to the server: one operation list, one verdict, one reason (the
    tool's change, read from its arguments by one reader, judged by one engine)."""
    engine, policy, env = setting
    _, server, tool = action[4:].split("__", 2)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    grant = engine.policy.grant_for(agent)
    assert grant is not None
    answer = explain(engine, request("POST", MCP_URLS[server], body), grant, agent)
    gate = gated(policy, agent, action, arguments, env)
    assert {"operations": list(gate.operations) if gate.operations else answer["operations"],
            "verdict": gate.outcome, "reason": gate.code} == {
        "operations": answer["operations"], "verdict": answer["verdict"], "reason": answer["reason"]}
