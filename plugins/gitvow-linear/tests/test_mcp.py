"""Linear MCP tool calls for the agent gate."""

from __future__ import annotations

import pytest

from gitvow_linear import LinearAdapter


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("mcp__linear__create_issue", {"title": "x", "team": "ENG"}, ("issue.create",)),
        ("mcp__linear__create_issue", {"title": "x", "team": "ENG", "parentId": "p"}, ("issue.create", "issue.relate")),
        ("mcp__linear__create_issue", {"title": "x", "team": "ENG", "blockedBy": ["ENG-1"]}, ("issue.create", "issue.relate")),
        ("mcp__linear__create_issue", {"title": "x", "team": "ENG", "blocks": []}, ("issue.create",)),
        ("mcp__linear__create_issue", {"title": "x", "team": "E", "links": [{"url": "u"}]}, ("issue.create", "attachment.link")),
        ("mcp__linear-server__update_issue", {"id": "ENG-1", "state": "Done"}, ("issue.edit",)),
        ("mcp__claude_ai_Linear__update_issue", {"id": "ENG-1", "duplicateOf": "ENG-2"}, ("issue.edit", "issue.relate")),
        ("mcp__plugin_linear_linear__create_comment", {"issueId": "i", "body": "b"}, ("issue.comment",)),
        ("mcp__linear__save_issue", {"title": "x", "team": "ENG"}, ("issue.create",)),
        ("mcp__linear__save_issue", {"id": "ENG-1", "title": "x"}, ("issue.edit",)),
        ("mcp__linear__save_comment", {"issueId": "i", "body": "b"}, ("issue.comment",)),
        ("mcp__linear__create_project", {"name": "RFC", "team": "ENG"}, ("issue.relate",)),
        ("mcp__linear__update_project", {"id": "p"}, ("issue.relate",)),
        ("mcp__linear__create_document", {"title": "t", "project": "p"}, ("unknown",)),
        ("mcp__linear__create_issue_label", {"name": "bug"}, ("unknown",)),
        ("mcp__linear__delete_comment", {"id": "c"}, ("unknown",)),
        ("mcp__linear__list_issues", {"team": "ENG"}, ("read",)),
        ("mcp__linear__get_issue", {"id": "ENG-1"}, ("read",)),
        ("mcp__linear__search_documentation", {"query": "triage"}, ("read",)),
        ("mcp__linear__get_something_new", {}, ("read",)),
        ("mcp__linear__archive_everything", {}, ("unknown",)),
    ],
)
def test_linear_tools(linear: LinearAdapter, tool: str, arguments: dict[str, object], expected: tuple[str, ...]) -> None:
    call = linear.classify_mcp_tool(tool, arguments)
    assert call is not None
    assert call.operations == expected
    assert call.adapter == "linear"


@pytest.mark.parametrize(
    "tool",
    ["create_issue", "mcp__github__create_issue", "mcp__linear", "mcp____create_issue", "Bash", "mcp__linear__"],
)
def test_tools_of_other_servers_are_not_claimed(linear: LinearAdapter, tool: str) -> None:
    assert linear.classify_mcp_tool(tool, {}) is None
