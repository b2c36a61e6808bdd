"""Gitea/Forgejo MCP tool calls for the agent gate."""

from __future__ import annotations

import pytest

from gitvow_gitea import GiteaAdapter

WHERE = {"owner": "team", "repo": "app"}


@pytest.mark.parametrize(
    ("tool", "operation"),
    [
        ("mcp__gitea__create_pull_request", "pr.create"),
        ("mcp__gitea__merge_pull_request", "pr.merge"),
        ("mcp__forgejo-mcp__create_issue", "issue.create"),
        ("mcp__gitea__create_issue_comment", "issue.comment"),
        ("mcp__gitea__replace_issue_labels", "label.add"),
        ("mcp__gitea__create_repo_label", "label.manage"),
        ("mcp__gitea__delete_branch", ("ref.write", "ref.delete")),
        ("mcp__gitea__update_file", "contents.write"),
        ("mcp__codeberg__fork_repo", "repo.fork"),
        ("mcp__gitea__list_repo_pull_requests", "read"),
        ("mcp__gitea__get_file_content", "read"),
        ("mcp__gitea__delete_repo", "unknown"),
    ],
)
def test_gitea_tools(gitea: GiteaAdapter, tool: str, operation: str | tuple[str, ...]) -> None:
    call = gitea.classify_mcp_tool(tool, WHERE)
    assert call is not None
    expected = (operation,) if isinstance(operation, str) else operation
    assert (call.operations, call.repo, call.adapter) == (expected, "team/app", "gitea")


@pytest.mark.parametrize("tool", ["create_pull_request", "mcp__github__create_pull_request", "mcp__gitea", "Bash"])
def test_tools_of_other_servers_are_not_claimed(gitea: GiteaAdapter, tool: str) -> None:
    assert gitea.classify_mcp_tool(tool, WHERE) is None


def test_a_call_without_a_repository_names_none(gitea: GiteaAdapter) -> None:
    call = gitea.classify_mcp_tool("mcp__gitea__create_repo", {"name": "new"})
    assert call is not None and call.operations == ("repo.create",) and call.repo is None
