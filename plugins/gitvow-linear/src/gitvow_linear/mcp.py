"""Linear MCP server tool calls → operations, for the agent gate.

The agent sees Linear's MCP server (``mcp.linear.app``) as tools named ``create_issue``,
``update_issue``, ``create_comment`` …; its hook reports them as ``mcp__<server>__<tool>``,
where ``<server>`` is whatever key the user gave the server (``linear``, ``linear-server``,
``claude_ai_Linear``, ``plugin_linear_linear``). A bare ``create_issue`` could be GitHub's MCP
tool as well, so only names whose server part mentions Linear are claimed.

The mapping mirrors the GraphQL one in :mod:`gitvow_linear.mutations`, so a tool call and the
request the server would send on the agent's behalf get the same verdict: an issue created
under a parent or with relations is also ``issue.relate``, links are ``attachment.link``,
projects are ``issue.relate``. Writes that the GraphQL side leaves ``unknown`` (documents,
workspace labels, deleting comments) are ``unknown`` here too. A tool not listed is a read
if its name says so (``list_``, ``get_``, ``search_``) and ``unknown`` otherwise, so a write
tool Linear adds later is refused until it is mapped.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitvow.mcp import split_tool
from gitvow.request import ToolCall

#: Read tools of Linear's MCP server (listed so the table documents the whole server).
READ_TOOLS: frozenset[str] = frozenset(
    {
        "list_comments",
        "list_cycles",
        "list_documents",
        "get_document",
        "list_issues",
        "list_my_issues",
        "get_issue",
        "get_issue_git_branch_name",
        "list_issue_statuses",
        "get_issue_status",
        "list_issue_labels",
        "list_projects",
        "get_project",
        "list_project_labels",
        "list_teams",
        "get_team",
        "list_users",
        "get_user",
        "search_documentation",
    }
)

#: Write tools and the operations they perform before argument-dependent additions.
WRITE_TOOLS: Mapping[str, tuple[str, ...]] = {
    "create_issue": ("issue.create",),
    "update_issue": ("issue.edit",),
    "create_comment": ("issue.comment",),
    "save_comment": ("issue.comment",),
    "create_project": ("issue.relate",),
    "update_project": ("issue.relate",),
    "create_document": ("unknown",),
    "update_document": ("unknown",),
    "create_issue_label": ("unknown",),
    "delete_comment": ("unknown",),
}

#: Issue arguments that link the issue to others (``parentId`` and the relation lists).
RELATING_ARGUMENTS = ("parentId", "blocks", "blockedBy", "relatedTo", "duplicateOf")
_READ_PREFIXES = ("list_", "get_", "search_")



def _issue_operations(base: tuple[str, ...], arguments: Mapping[str, object]) -> tuple[str, ...]:
    operations = list(base)
    if any(arguments.get(key) not in (None, "", [], ()) for key in RELATING_ARGUMENTS):
        operations.append("issue.relate")
    if arguments.get("links") not in (None, "", [], ()):
        operations.append("attachment.link")
    return tuple(operations)


def classify_linear_tool(tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
    """Operations of a Linear MCP tool call, or None if the tool is not Linear's."""
    server, name = split_tool(tool)
    if not server or not name or "linear" not in server.lower():
        return None
    if name == "save_issue":
        # One tool for both: an ``id`` means the issue exists.
        base = ("issue.edit",) if arguments.get("id") else ("issue.create",)
        return ToolCall(_issue_operations(base, arguments), adapter="linear", summary=f"Linear MCP {name}")
    if name in WRITE_TOOLS:
        operations = WRITE_TOOLS[name]
        if name in ("create_issue", "update_issue"):
            operations = _issue_operations(operations, arguments)
        return ToolCall(operations, adapter="linear", summary=f"Linear MCP {name}")
    if name in READ_TOOLS or name.startswith(_READ_PREFIXES):
        return ToolCall(("read",), adapter="linear", summary=f"Linear MCP {name}")
    return ToolCall(("unknown",), adapter="linear", summary=f"Linear MCP {name} (not a known tool)")
