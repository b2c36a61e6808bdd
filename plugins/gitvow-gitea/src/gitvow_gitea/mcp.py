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

import base64
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from gitvow.change import with_operations
from gitvow.mcp import created_branch, split_tool
from gitvow.request import ToolCall

if TYPE_CHECKING:
    from gitvow.change import Change

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
    operations: tuple[str, ...] = (operation, "ref.delete") if name in DELETIONS else (operation,)
    change = created_branch(name, arguments) if name == "create_branch" else tool_change(name, arguments)
    if change is not None:
        operations = with_operations(operations, change)
    return ToolCall(operations, repo=target, adapter="gitea", summary=f"Gitea MCP {name}", change=change)


def tool_change(name: str, arguments: Mapping[str, object]) -> Change | None:
    """What a write tool changes: the change of the API write the server sends for it, read by
    the REST reader (:mod:`gitvow_gitea.changes`) from the request built of the tool's
    arguments. ``create_file``/``update_file``/``delete_file`` are the contents API (the server
    base64-encodes the plain ``content``); ``delete_branch``, ``create_tag`` and ``delete_tag``
    the branches and tags APIs. A wiki page is not read (refused: ``change_unestablished``)."""
    build = _WRITES.get(name)
    if build is None:
        return None
    from gitvow.api_change import unestablished

    owner, repo = arguments.get("owner"), arguments.get("repo")
    if not isinstance(owner, str) or not isinstance(repo, str) or not owner or not repo:
        return unestablished("owner and repo are not strings")
    try:
        method, below, body = build(arguments)
    except ValueError as exc:
        return unestablished(str(exc))
    from gitvow.request import Request
    from gitvow_gitea.adapter import API, GiteaAdapter

    request = Request(method, "gitea.invalid", f"{API}/repos/{quote(owner)}/{quote(repo)}/{below}",
                      headers={"content-type": "application/json"}, body=json.dumps(body).encode())
    return GiteaAdapter().classify(request).change


def _text(arguments: Mapping[str, object], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} is not a string")
    return value


def _optional(arguments: Mapping[str, object], **keys: str) -> dict[str, object]:
    """The tool's arguments under the API's names (``branch_name`` → ``branch``)."""
    return {api: arguments[tool] for tool, api in keys.items() if arguments.get(tool) is not None}


def _file(method: str) -> Callable[[Mapping[str, object]], tuple[str, str, dict[str, object]]]:
    def build(arguments: Mapping[str, object]) -> tuple[str, str, dict[str, object]]:
        body = _optional(arguments, message="message", branch_name="branch", new_branch_name="new_branch",
                         sha="sha")
        if method != "DELETE":
            content = arguments.get("content", "")
            if not isinstance(content, str):
                raise ValueError("content is not a string")
            body["content"] = base64.b64encode(content.encode("utf-8", "surrogateescape")).decode("ascii")
        return method, f"contents/{quote(_text(arguments, 'filepath'), safe='/')}", body
    return build


_WRITES: Mapping[str, Callable[[Mapping[str, object]], tuple[str, str, dict[str, object]]]] = {
    "create_file": _file("POST"),
    "update_file": _file("PUT"),
    "delete_file": _file("DELETE"),
    "delete_branch": lambda a: ("DELETE", f"branches/{quote(_text(a, 'branch'), safe='/')}", {}),
    "create_tag": lambda a: ("POST", "tags", {"tag_name": _text(a, "tag_name"),
                                              **_optional(a, target="target", message="message")}),
    "delete_tag": lambda a: ("DELETE", f"tags/{quote(_text(a, 'tag_name'), safe='/')}", {}),
}
