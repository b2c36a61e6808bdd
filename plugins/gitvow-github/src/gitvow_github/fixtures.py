"""Wire examples for the contract kit: one or more per operation GitHub can express, near
misses that look like an operation and are not, and requests that must fail closed."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gitvow.graphql import BODY_LIMIT, TOKEN_LIMIT
from gitvow.request import Fixture
from gitvow_gitsmart.adapter import push_body

API = "https://api.github.com"
WEB = "https://github.com"
UPLOADS = "https://uploads.github.com"
#: A GitHub Enterprise Server host; the contract kit maps fixture hosts to the adapter.
GHES = "https://ghe.example.test"
REPO = "octo/app"
R = f"{API}/repos/{REPO}"


def gql(query: str, variables: Mapping[str, object] | None = None, operation_name: str | None = None) -> bytes:
    """A GraphQL-over-HTTP body."""
    payload: dict[str, object] = {"query": query}
    if variables is not None:
        payload["variables"] = dict(variables)
    if operation_name is not None:
        payload["operationName"] = operation_name
    return json.dumps(payload).encode()


def mutation(field: str, input_: str = "{clientMutationId: \"x\"}") -> bytes:
    return gql(f"mutation {{ {field}(input: {input_}) {{ clientMutationId }} }}")


_PUSH = push_body(("a" * 40, "b" * 40, "refs/heads/main"))

FIXTURES: tuple[Fixture, ...] = (
    # read
    Fixture("GET", f"{R}", ("read",), repo=REPO),
    Fixture("GET", f"{R}/contents/docs/guide/intro.md?ref=main", ("read",), repo=REPO),
    Fixture("HEAD", f"{R}/pulls/7", ("read",), repo=REPO),
    Fixture("POST", f"{API}/graphql", ("read",), body=gql('query { repository(owner: "octo", name: "app") { id } }'), repo=REPO),
    Fixture("POST", f"{API}/markdown", ("read",), note="renders Markdown; stores nothing"),
    # auth.login (github.com device flow)
    Fixture("POST", f"{WEB}/login/device/code", ("auth.login",), body=b"client_id=x&scope=repo"),
    Fixture("POST", f"{WEB}/login/oauth/access_token", ("auth.login",), body=b"client_id=x&device_code=y"),
    # git smart-HTTP on github.com, delegated to gitsmart
    Fixture("GET", f"{WEB}/{REPO}.git/info/refs?service=git-upload-pack", ("git.fetch",), repo=REPO),
    Fixture("POST", f"{WEB}/{REPO}.git/git-upload-pack", ("git.fetch",), body=b"0000", repo=REPO),
    Fixture("GET", f"{WEB}/{REPO}.git/info/refs?service=git-receive-pack", ("git.push",), repo=REPO),
    Fixture("POST", f"{WEB}/{REPO}.git/git-receive-pack", ("git.push",), body=_PUSH, repo=REPO),
    Fixture("POST", f"{WEB}/{REPO}.git/git-receive-pack", ("git.push", "ref.force"),
            body=push_body(("a" * 40, "b" * 40, "refs/heads/main"), force=True), repo=REPO, note="not a fast-forward"),
    Fixture("POST", f"{WEB}/{REPO}.git/git-receive-pack", ("git.push", "ref.delete"),
            body=push_body(("a" * 40, "0" * 40, "refs/heads/old")), repo=REPO),
    # ref.write
    Fixture("POST", f"{R}/git/refs", ("ref.write",), body=b'{"ref":"refs/heads/x","sha":"' + b"a" * 40 + b'"}', repo=REPO),
    Fixture("POST", f"{R}/git/commits", ("ref.write",), body=b"{}", repo=REPO),
    Fixture("PATCH", f"{R}/git/refs/heads/feature", ("ref.write",), body=b'{"sha":"' + b"a" * 40 + b'"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("ref.write",), body=mutation("createCommitOnBranch")),
    # ref.force and ref.delete through the API: what the write does to the ref, read from its body
    Fixture("PATCH", f"{R}/git/refs/heads/feature", ("ref.write", "ref.force"),
            body=b'{"sha":"' + b"a" * 40 + b'","force":true}', repo=REPO),
    Fixture("DELETE", f"{R}/git/refs/heads/feature/nested", ("ref.write", "ref.delete"), repo=REPO),
    Fixture("POST", f"{API}/graphql", ("ref.write", "ref.force"),
            body=mutation("updateRef", '{refId: "REF_1", oid: "' + "a" * 40 + '", force: true}')),
    Fixture("POST", f"{API}/graphql", ("ref.write", "ref.delete"), body=mutation("deleteRef", '{refId: "REF_1"}')),
    Fixture("POST", f"{R}/branches/old/rename", ("ref.write", "ref.delete"), body=b'{"new_name":"new"}', repo=REPO),
    # branch.protect
    Fixture("PUT", f"{R}/branches/release/2.x/protection", ("branch.protect",), body=b"{}", repo=REPO),
    Fixture("POST", f"{API}/graphql", ("branch.protect",), body=mutation("createBranchProtectionRule")),
    # issues
    Fixture("POST", f"{R}/issues", ("issue.create",), body=b'{"title":"t"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("issue.create",), body=mutation("createIssue")),
    Fixture("PATCH", f"{R}/issues/12", ("issue.edit",), body=b'{"state":"closed"}', repo=REPO),
    Fixture("POST", f"{R}/issues/12/comments", ("issue.comment",), body=b'{"body":"hi"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("issue.comment",), body=mutation("addComment")),
    Fixture("POST", f"{R}/issues/12/labels", ("label.add",), body=b'{"labels":["bug"]}', repo=REPO),
    Fixture("POST", f"{R}/issues/12/sub_issues", ("issue.relate",), body=b'{"sub_issue_id":1}', repo=REPO),
    Fixture("POST", f"{R}/issues/12/dependencies/blocked_by", ("issue.relate",), body=b'{"issue_id":1}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("issue.relate",), body=mutation("addSubIssue")),
    # pull requests
    Fixture("POST", f"{R}/pulls", ("pr.create",), body=b'{"head":"x","base":"main","title":"t"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("pr.create",), body=mutation("createPullRequest")),
    Fixture("PATCH", f"{R}/pulls/7", ("pr.edit",), body=b'{"title":"t"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("pr.edit",), body=mutation("markPullRequestReadyForReview")),
    Fixture("POST", f"{R}/pulls/7/reviews", ("pr.review",), body=b'{"event":"COMMENT"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("pr.review",), body=mutation("addPullRequestReview")),
    Fixture("PUT", f"{R}/pulls/7/update-branch", ("pr.update_branch",), body=b"{}", repo=REPO),
    Fixture("PUT", f"{R}/pulls/7/merge", ("pr.merge",), body=b"{}", repo=REPO),
    Fixture("POST", f"{API}/graphql", ("pr.merge",), body=mutation("mergePullRequest")),
    Fixture("POST", f"{API}/graphql", ("pr.merge",), body=mutation("mergeBranch")),
    Fixture("POST", f"{API}/graphql", ("pr.merge",), body=mutation("enablePullRequestAutoMerge")),
    Fixture("POST", f"{R}/merges", ("pr.merge",), body=b'{"base":"main","head":"x"}', repo=REPO),
    # the dangerous write classes
    Fixture("POST", f"{API}/user/repos", ("repo.create",), body=b'{"name":"x"}'),
    Fixture("POST", f"{API}/repos/octo/template/generate", ("repo.create",), body=b"{}", repo="octo/template"),
    Fixture("DELETE", f"{R}", ("repo.delete",), repo=REPO),
    Fixture("POST", f"{R}/forks", ("repo.fork",), body=b"{}", repo=REPO),
    Fixture("POST", f"{R}/hooks", ("repo.admin",), body=b"{}", repo=REPO),
    Fixture("POST", f"{R}/keys", ("repo.admin",), body=b"{}", repo=REPO),
    Fixture("PUT", f"{R}/collaborators/mallory", ("repo.admin",), body=b"{}", repo=REPO),
    Fixture("PUT", f"{R}/contents/src/app.py", ("contents.write",), body=b'{"message":"m","content":""}', repo=REPO),
    Fixture("POST", f"{R}/releases", ("release.write",), body=b'{"tag_name":"v1"}', repo=REPO),
    Fixture("POST", f"{UPLOADS}/repos/{REPO}/releases/1/assets?name=a.zip", ("release.write",), body=b"PK", repo=REPO),
    Fixture("POST", f"{API}/gists", ("gist.write",), body=b'{"files":{}}'),
    Fixture("POST", f"{R}/actions/workflows/ci.yml/dispatches", ("workflow.dispatch",), body=b'{"ref":"main"}', repo=REPO),
    Fixture("PUT", f"{R}/actions/secrets/DEPLOY_KEY", ("secret.write",), body=b"{}", repo=REPO),
    Fixture("POST", f"{R}/labels", ("label.manage",), body=b'{"name":"x"}', repo=REPO, near_miss=True,
            note="creates a repository label; label.add puts an existing one on an issue"),
    # unknown, with a reason in the mapping
    Fixture("POST", f"{R}/statuses/{'c' * 40}", ("unknown",), body=b'{"state":"success"}', repo=REPO),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=mutation("deleteIssue")),
    # several top-level fields: every one counts; aliases and fragments resolved
    Fixture("POST", f"{API}/graphql", ("issue.comment", "issue.create"),
            body=gql("mutation { a: addComment(input: {}) { clientMutationId } b: createIssue(input: {}) { clientMutationId } }")),
    Fixture("POST", f"{API}/graphql", ("pr.merge",),
            body=gql("mutation M { ...F } fragment F on Mutation { harmless: mergePullRequest(input: {}) { clientMutationId } }")),
    # GitHub Enterprise Server: /api/v3, /api/graphql, git at the root
    Fixture("POST", f"{GHES}/api/v3/repos/{REPO}/pulls", ("pr.create",), body=b"{}", repo=REPO),
    Fixture("PUT", f"{GHES}/api/v3/repos/{REPO}/pulls/3/merge", ("pr.merge",), body=b"{}", repo=REPO),
    Fixture("POST", f"{GHES}/api/graphql", ("issue.comment",), body=mutation("addComment")),
    Fixture("POST", f"{GHES}/{REPO}.git/git-receive-pack", ("git.push",), body=_PUSH, repo=REPO),
    Fixture("POST", f"{GHES}/login/device/code", ("auth.login",), body=b"client_id=x"),
    # near misses
    Fixture("POST", f"{R}/pulls/7/comments", ("pr.review",), body=b"{}", repo=REPO, near_miss=True,
            note="a diff comment is a review, not an issue comment"),
    Fixture("GET", f"{R}/pulls/7/merge", ("read",), repo=REPO, near_miss=True, note="checks whether merged"),
    Fixture("POST", f"{R}/pulls/7/merge", ("unknown",), body=b"{}", repo=REPO, near_miss=True, note="merge is PUT"),
    Fixture("DELETE", f"{R}/issues/12/sub_issue", ("unknown",), body=b"{}", repo=REPO, near_miss=True,
            note="unlinking a sub-issue stays denied"),
    Fixture("POST", f"{API}/graphql", ("read",), body=gql("query mergePullRequest { viewer { login } }"), near_miss=True,
            note="a query named like a mutation is still a query"),
    Fixture("POST", f"{WEB}/login/device", ("unknown",), body=b"user_code=x", near_miss=True,
            note="confirming a device code is the human's step"),
    Fixture("POST", f"{API}/repos/{REPO}/git/refs/heads/main", ("unknown",), body=b"{}", repo=REPO, near_miss=True,
            note="refs are moved with PATCH"),
)

_OVER_TOKENS = gql("query { " + "a " * (TOKEN_LIMIT + 1) + "}")

FAIL_CLOSED: tuple[Fixture, ...] = (
    Fixture("POST", f"{API}/graphql", ("unknown",), body=b"{not json", note="unparseable JSON"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=gql("mutation { createIssue(input: {"), note="unparseable document"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=gql("query { viewer { login } }" + " " * BODY_LIMIT), note="over the body limit"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=_OVER_TOKENS, note="over the token limit"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=gql("query A { viewer { login } } mutation B { mergePullRequest(input: {}) { clientMutationId } }"),
            note="two operations, no operationName"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=gql("subscription { issueUpdated { id } }"), note="subscription"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=b'[{"query":"query { viewer { login } }"}]', note="batch"),
    Fixture("POST", f"{API}/graphql", ("unknown",), body=mutation("launchMissiles"), note="a mutation not in the schema"),
    Fixture("GET", f"{API}/graphql?query=mutation%7BmergePullRequest%7D", ("unknown",), note="GraphQL over GET"),
    Fixture("POST", f"{R}/pulls/7/explode", ("unknown",), body=b"{}", note="unmatched route"),
    Fixture("DELETE", f"{R}/pulls/7/../../..", ("unknown",), note="dot segments"),
    Fixture("POST", f"{WEB}/{REPO}/settings", ("unknown",), body=b"x", note="a web form post"),
    Fixture("POST", f"{WEB}/{REPO}.git/git-receive-pack", ("unknown",), body=b"zzzz", note="unreadable push"),
)

UNSUPPORTED: Mapping[str, str] = {
    "agent.session": "GitHub has no agent-session API (Linear's agent activity)",
    "attachment.link": "GitHub issues have no attachments API (Linear's attachments)",
    "inference.call": "model endpoints are the inference adapter's (api.githubcopilot.com)",
}
