"""``gh`` command lines and GitHub MCP tool calls map to the operations of the requests they send."""

from __future__ import annotations

import shlex

import pytest

from gitvow.request import Request
from gitvow_github.adapter import GitHubAdapter

GH = [
    ("gh pr create --title t --body b", ("pr.create",), None),
    ("gh pr create -R octo/app --fill", ("pr.create",), "octo/app"),
    ("gh pr merge 12 --squash", ("pr.merge",), None),
    ("gh pr merge 12 --auto --repo=octo/app", ("pr.merge",), "octo/app"),
    ("gh pr merge 12 --disable-auto", ("pr.edit",), None),
    ("gh pr review 12 --approve", ("pr.review",), None),
    ("gh pr comment 12 --body hi", ("issue.comment",), None),
    ("gh pr edit 12 --title t", ("pr.edit",), None),
    ("gh pr edit 12 --add-label bug", ("pr.edit", "label.add"), None),
    ("gh pr ready 12", ("pr.edit",), None),
    ("gh pr update-branch 12", ("pr.update_branch",), None),
    ("gh pr view https://github.com/octo/app/pull/12", ("read",), "octo/app"),
    ("gh pr checkout 12", ("git.fetch",), None),
    ("gh issue create -t t -b b -Roct/app", ("issue.create",), "oct/app"),
    ("gh issue comment 3 -b hi", ("issue.comment",), None),
    ("gh issue edit 3 --add-label bug", ("issue.edit", "label.add"), None),
    ("gh issue close 3", ("issue.edit",), None),
    ("gh issue delete 3", ("unknown",), None),
    ("gh label create bug", ("label.manage",), None),
    ("gh label list", ("read",), None),
    ("gh repo delete octo/app --yes", ("repo.delete",), "octo/app"),  # the repository is the positional
    ("gh repo create octo/new --private", ("repo.create",), "octo/new"),
    ("gh repo fork octo/app", ("repo.fork",), "octo/app"),
    ("gh release create v1 ./a.zip", ("release.write",), None),
    ("gh gist create notes.md", ("gist.write",), None),
    ("gh workflow run ci.yml --ref main", ("workflow.dispatch",), None),
    ("gh secret set TOKEN --body x", ("secret.write",), None),
    ("gh auth login --web", ("auth.login",), None),
    ("gh search issues bug", ("read",), None),
    ("gh --version", ("read",), None),
    ("gh codespace create", ("unknown",), None),
    ("gh pr frobnicate 1", ("unknown",), None),
    ("/usr/bin/gh pr merge 1", ("pr.merge",), None),
    # gh api: the same trie and GraphQL mapping as the wire
    ("gh api -X PUT repos/octo/app/pulls/1/merge", ("pr.merge",), "octo/app"),
    ("gh api --method=PUT /repos/octo/app/pulls/1/merge", ("pr.merge",), "octo/app"),
    ("gh api -XPUT repos/{owner}/{repo}/pulls/1/merge", ("pr.merge",), None),
    ("gh api -X=PUT /repos/octo/app/pulls/1/merge", ("pr.merge",), "octo/app"),
    ("gh api repos/octo/app/pulls -f title=t -f head=x -f base=main", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls", ("read",), "octo/app"),
    # every spelling gh's flag parser takes for a field makes the call a write (POST)
    ("gh api repos/octo/app/pulls -ftitle=t", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls --raw-field=title=t", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls --raw-field title=t", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls -Fdraft=true", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls --field=draft=true", ("pr.create",), "octo/app"),
    ("gh api repos/octo/app/pulls --field draft=true", ("pr.create",), "octo/app"),
    ("gh api --method PUT repos/octo/app/pulls/1/merge", ("pr.merge",), "octo/app"),
    ("gh api repos/octo/app/pulls --input body.json", ("pr.create",), "octo/app"),
    ("gh api -X DELETE repos/octo/app/git/refs/heads/feature/x", ("ref.write", "ref.delete"), "octo/app"),
    ("gh api -X PATCH repos/octo/app/git/refs/heads/x -F sha=abc -F force=true", ("ref.write", "ref.force"), "octo/app"),
    ("gh api -X PATCH repos/octo/app/git/refs/heads/x -f sha=abc", ("ref.write",), "octo/app"),
    ("gh api -X POST repos/octo/app/issues/3/sub_issues -F sub_issue_id=9", ("issue.relate",), "octo/app"),
    ("gh api https://ghe.example.test/api/v3/repos/octo/app/pulls -X POST", ("pr.create",), "octo/app"),
    ("gh api -X POST repos/octo/app/nonsense", ("unknown",), "octo/app"),
    ("gh api graphql -f query='mutation { mergePullRequest(input: {pullRequestId: \"x\"}) { clientMutationId } }'", ("pr.merge",), None),
    ("gh api graphql -f query='query($o: String!) { repository(owner: $o, name: \"app\") { id } }' -f o=octo", ("read",), "octo/app"),
    ("gh api graphql -F query=@mutation.graphql", ("unknown",), None),
    ("gh api graphql -f query='mutation { nope }' ", ("unknown",), None),
    ("gh api", ("unknown",), None),
]


@pytest.mark.parametrize(("line", "operations", "repo"), GH, ids=[g[0][:60] for g in GH])
def test_gh_command_lines(adapter: GitHubAdapter, line: str, operations: tuple[str, ...], repo: str | None) -> None:
    call = adapter.classify_command(shlex.split(line))
    assert call is not None
    assert (call.operations, call.repo, call.adapter) == (operations, repo, "github")
    assert call.summary.startswith("gh")


def test_not_gh(adapter: GitHubAdapter) -> None:
    assert adapter.classify_command(["git", "push"]) is None
    assert adapter.classify_command([]) is None
    assert adapter.classify_command(["ghx", "pr", "merge"]) is None


def test_gh_api_agrees_with_the_wire(adapter: GitHubAdapter) -> None:
    """``gh api -X M path`` and the request it sends get the same operations and repository."""
    for method, path in [("PUT", "repos/octo/app/pulls/1/merge"), ("POST", "repos/octo/app/forks"),
                         ("PATCH", "repos/octo/app"), ("DELETE", "repos/octo/app/actions/secrets/X")]:
        call = adapter.classify_command(["gh", "api", "-X", method, path])
        wire = adapter.classify(Request.from_url(method, f"https://api.github.com/{path}"))
        assert call is not None and (call.operations, call.repo) == (wire.operations, wire.repo)


MCP: list[tuple[str, dict[str, object], tuple[str, ...], str | None]] = [
    ("create_pull_request", {"owner": "octo", "repo": "app"}, ("pr.create",), "octo/app"),
    ("merge_pull_request", {"owner": "octo", "repo": "app", "pullNumber": 1}, ("pr.merge",), "octo/app"),
    ("mcp__github__merge_pull_request", {}, ("pr.merge",), None),
    ("add_issue_comment", {"owner": "octo", "repo": "app"}, ("issue.comment",), "octo/app"),
    ("create_issue", {}, ("issue.create",), None),
    ("update_issue", {}, ("issue.edit",), None),
    ("create_or_update_file", {}, ("contents.write",), None),
    ("push_files", {}, ("ref.write",), None),
    ("create_branch", {}, ("ref.write",), None),
    ("delete_file", {}, ("contents.write",), None),
    ("fork_repository", {}, ("repo.fork",), None),
    ("create_repository", {}, ("repo.create",), None),
    ("update_pull_request_branch", {}, ("pr.update_branch",), None),
    ("issue_write", {"method": "create"}, ("issue.create",), None),
    ("issue_write", {"method": "update"}, ("issue.edit",), None),
    ("issue_write", {"method": "explode"}, ("unknown",), None),
    ("issue_write", {}, ("unknown",), None),
    ("sub_issue_write", {"method": "add"}, ("issue.relate",), None),
    ("sub_issue_write", {"method": "remove"}, ("unknown",), None),
    ("pull_request_review_write", {"method": "create"}, ("pr.review",), None),
    ("label_write", {"method": "delete"}, ("label.manage",), None),
    ("actions_run_trigger", {"method": "run_workflow"}, ("workflow.dispatch",), None),
    ("get_file_contents", {"owner": "octo", "repo": "app"}, ("read",), "octo/app"),
    ("pull_request_read", {"method": "get"}, ("read",), None),
    ("mcp__github__teleport_repository", {}, ("unknown",), None),
    ("assign_copilot_to_issue", {}, ("unknown",), None),
]


@pytest.mark.parametrize(("tool", "arguments", "operations", "repo"), MCP, ids=[f"{m[0]}-{m[1].get('method', '')}" for m in MCP])
def test_mcp_tools(adapter: GitHubAdapter, tool: str, arguments: dict[str, object], operations: tuple[str, ...], repo: str | None) -> None:
    call = adapter.classify_mcp_tool(tool, arguments)
    assert call is not None
    assert (call.operations, call.repo) == (operations, repo)


def test_other_servers_tools_are_not_ours(adapter: GitHubAdapter) -> None:
    assert adapter.classify_mcp_tool("mcp__linear__create_issue", {}) is None
    assert adapter.classify_mcp_tool("frobnicate", {}) is None
