"""Gitea/Forgejo MCP server tool calls → operations, for the agent gate.

The official ``gitea-mcp`` server and ``forgejo-mcp`` name their tools after the API calls they
make (``create_pull_request``, ``create_issue_comment``, ``add_issue_labels`` …). The hook
reports them as ``mcp__<server>__<tool>``; only servers whose key mentions Gitea, Forgejo or
Codeberg are claimed, because ``create_issue`` alone could be any forge's. The mapping is the
REST table's (:mod:`gitvow_gitea.routes`), so a tool call and the request it causes agree.
A tool not listed is ``read`` if its name says so (``list_``, ``get_``, ``search_``) and
``unknown`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitvow.mcp import created_branch, split_tool
from gitvow.request import ToolCall

_SERVERS = ("gitea", "forgejo", "codeberg")
_READ_PREFIXES = ("list_", "get_", "search_")

TOOLS: Mapping[str, str] = {
    "create_pull_request": "pr.create",
    "merge_pull_request": "pr.merge",
    "edit_pull_request": "pr.edit",
    "update_pull_request": "pr.edit",
    "create_pull_request_review": "pr.review",
    "submit_pull_request_review": "pr.review",
    "create_issue": "issue.create",
    "edit_issue": "issue.edit",
    "update_issue": "issue.edit",
    "issue_state_change": "issue.edit",
    "create_issue_comment": "issue.comment",
    "edit_issue_comment": "issue.comment",
    "add_issue_labels": "label.add",
    "replace_issue_labels": "label.add",
    "remove_issue_label": "label.add",
    "clear_issue_labels": "label.add",
    "create_repo_label": "label.manage",
    "edit_repo_label": "label.manage",
    "delete_repo_label": "label.manage",
    "create_milestone": "issue.relate",
    "edit_milestone": "issue.relate",
    "create_branch": "ref.write",
    "delete_branch": "ref.write",
    "create_tag": "ref.write",
    "delete_tag": "ref.write",
    "create_file": "contents.write",
    "update_file": "contents.write",
    "delete_file": "contents.write",
    "create_wiki_page": "contents.write",
    "update_wiki_page": "contents.write",
    "delete_wiki_page": "contents.write",
    "create_release": "release.write",
    "delete_release": "release.write",
    "create_repo": "repo.create",
    "fork_repo": "repo.fork",
}


#: Tools that delete a ref: also ``ref.delete``, as the ``DELETE`` they send is.
DELETIONS = frozenset({"delete_branch", "delete_tag"})


def classify_gitea_tool(tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
    """Operations of a Gitea/Forgejo MCP tool call, or None if the server is not one of theirs."""
    server, name = split_tool(tool)
    if server is None or not name or not any(key in server.lower() for key in _SERVERS):
        return None
    owner, repo = arguments.get("owner"), arguments.get("repo")
    target = f"{owner}/{repo}" if isinstance(owner, str) and isinstance(repo, str) and owner and repo else None
    operation = TOOLS.get(name)
    if operation is None:
        operation = "read" if name.startswith(_READ_PREFIXES) else "unknown"
    operations = (operation, "ref.delete") if name in DELETIONS else (operation,)
    return ToolCall(operations, repo=target, adapter="gitea", summary=f"Gitea MCP {name}",
                    change=created_branch(name, arguments))
