"""GitLab MCP tool calls → operations, for the agent gate.

Tool names come from the GitLab MCP servers agents actually install: the reference server
(npm ``@modelcontextprotocol/server-gitlab``), the widely used ``@zereight/mcp-gitlab``, and
GitLab's own built-in server. Agents see them as ``mcp__<server>__<tool>``; a call is this
forge's when the server name contains ``gitlab``, or when a bare tool name is in the table.

Fail closed: on a GitLab server, a tool that is neither in the table nor named like a read
(``get_…``, ``list_…``, ``search_…``) is ``unknown``. ``execute_graphql`` is classified by
the document it carries, through the same GraphQL code as the proxy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from gitvow.change import with_operations
from gitvow.comments import TEXT_OPERATIONS, strings_in
from gitvow.mcp import created_branch, split_tool
from gitvow.request import Classification, ToolCall
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_gitlab.quick_actions import quick_actions

if TYPE_CHECKING:
    from gitvow.change import Change

_TOOLS: dict[str, tuple[str, ...]] = {
    "pr.create": ("create_merge_request",),
    "pr.merge": ("merge_merge_request", "accept_merge_request"),
    "pr.edit": ("update_merge_request",),
    "pr.review": (
        "approve_merge_request", "unapprove_merge_request", "review_merge_request",
        "create_merge_request_thread", "create_merge_request_discussion_note",
        "update_merge_request_discussion_note", "resolve_merge_request_thread",
        "create_draft_note", "update_draft_note", "delete_draft_note", "publish_draft_note",
        "bulk_publish_draft_notes",
    ),
    "issue.comment": (
        "create_note", "create_merge_request_note", "update_merge_request_note", "create_issue_note",
        "update_issue_note", "create_work_item_note", "create_workitem_note",
        "create_issue_emoji_reaction", "delete_issue_emoji_reaction",
        "create_issue_note_emoji_reaction", "delete_issue_note_emoji_reaction",
        "create_merge_request_emoji_reaction", "delete_merge_request_emoji_reaction",
        "create_merge_request_note_emoji_reaction", "delete_merge_request_note_emoji_reaction",
        "create_work_item_emoji_reaction", "delete_work_item_emoji_reaction",
        "create_work_item_note_emoji_reaction", "delete_work_item_note_emoji_reaction",
    ),
    "issue.create": ("create_issue", "create_work_item", "create_workitem"),
    "issue.edit": ("update_issue", "update_issue_description_patch", "update_work_item", "convert_work_item_type"),
    "issue.relate": ("create_issue_link", "create_milestone", "edit_milestone", "create_group_milestone",
                     "edit_group_milestone"),
    "label.manage": ("create_label", "update_label", "delete_label"),
    "ref.write": ("create_branch", "delete_branch", "create_tag", "delete_tag", "push_files"),
    "branch.protect": ("protect_branch", "unprotect_branch"),
    "contents.write": ("create_or_update_file", "create_wiki_page", "update_wiki_page",
                       "delete_wiki_page", "create_group_wiki_page", "update_group_wiki_page",
                       "delete_group_wiki_page"),
    "attachment.link": ("upload_markdown",),
    "repo.create": ("create_repository",),
    "repo.fork": ("fork_repository",),
    "repo.admin": ("update_project", "update_default_branch", "create_webhook", "update_webhook",
                   "delete_webhook", "promote_milestone"),
    "release.write": ("create_release", "update_release", "delete_release", "create_release_evidence"),
    "workflow.dispatch": (
        "create_pipeline", "retry_pipeline", "cancel_pipeline", "delete_pipeline", "play_pipeline_job",
        "play_pipeline_jobs", "retry_pipeline_job", "cancel_pipeline_job", "erase_pipeline_job",
        "trigger_pipeline", "create_pipeline_schedule", "update_pipeline_schedule", "delete_pipeline_schedule",
        "play_pipeline_schedule", "take_ownership_pipeline_schedule", "create_deployment", "update_deployment",
        "delete_deployment", "approve_deployment", "stop_environment", "stop_stale_environments",
        "delete_environment", "update_environment", "delete_review_app_environments", "update_pipeline_metadata",
    ),
    "secret.write": (
        "create_project_variable", "update_project_variable", "delete_project_variable",
        "create_group_variable", "update_group_variable", "delete_group_variable",
        "create_pipeline_schedule_variable", "update_pipeline_schedule_variable",
        "delete_pipeline_schedule_variable", "create_pipeline_trigger", "update_pipeline_trigger",
        "delete_pipeline_trigger",
    ),
    UNKNOWN: (
        "delete_issue", "delete_issue_link", "delete_merge_request_note", "delete_merge_request_discussion_note",
        "delete_milestone", "delete_group_milestone", "move_work_item", "mark_todo_done", "mark_all_todos_done",
        "create_group", "create_commit_status", "confirm_vulnerability", "dismiss_vulnerability",
        "triage_vulnerabilities", "create_timeline_event", "purge_dependency_proxy_cache",
        "update_dependency_proxy_settings",
    ),
    READ: ("health_check", "whoami", "discover_tools", "verify_namespace", "my_issues", "mr_discussions",
           "gitlab_search", "semantic_code_search", "get_mcp_server_version", "validate_ci_lint",
           "validate_project_ci_lint"),
}
#: Tool name → operation, every GitLab MCP tool gitvow knows by name.
TOOLS: Mapping[str, str] = {tool: op for op, tools in _TOOLS.items() for tool in tools}
READ_PREFIXES = ("get_", "list_", "search_", "download_", "wait_for_")
GRAPHQL_TOOLS = frozenset({"execute_graphql"})

#: A GraphQL document and its variables → its classification, as the proxy reads it.
GraphQLClassifier = Callable[[str, object], Classification]



def _repo(arguments: Mapping[str, object]) -> str | None:
    for key in ("project_id", "projectPath", "project_path", "project", "repo"):
        value = arguments.get(key)
        if isinstance(value, str) and value and not value.isdigit():
            return value.strip("/")
    return None


#: Tools that delete a ref: also ``ref.delete``, as the ``DELETE`` they send is.
DELETIONS = frozenset({"delete_branch", "delete_tag"})


def classify_mcp(tool: str, arguments: Mapping[str, object], graphql: GraphQLClassifier) -> ToolCall | None:
    """Operations a GitLab MCP tool call performs, or None if the tool is not GitLab's."""
    server, name = split_tool(tool)
    ours = server is not None and "gitlab" in server.lower()
    if server and not ours:
        return None
    repo = _repo(arguments)
    if name in GRAPHQL_TOOLS and ours:
        found = graphql(str(arguments.get("query", "")), arguments.get("variables"))
        return ToolCall(found.operations, repo=found.repos[0] if found.repos else repo, repos=found.repos,
                        adapter="gitlab", summary=f"MCP {name}", unknown_code=found.unknown_code,
                        mode_code=found.mode_code, note=found.note, targets=found.targets)
    op = TOOLS.get(name)
    if op is None:
        if not ours:
            return None
        op = READ if name.startswith(READ_PREFIXES) else UNKNOWN
    operations: tuple[str, ...] = (op, "ref.delete") if name in DELETIONS else (op,)
    if op in TEXT_OPERATIONS:
        # Notes and descriptions carry quick actions (``create_note`` with body ``/merge``).
        commands = quick_actions(list(strings_in(dict(arguments))), _context(name, arguments))
        operations = tuple(dict.fromkeys((op, *commands.operations)))
    change = created_branch(name, arguments) if name == "create_branch" else tool_change(name, arguments)
    if change is not None:
        operations = with_operations(operations, change)
    return ToolCall(operations, repo=repo, adapter="gitlab", summary=f"MCP {name}", change=change)


def tool_change(name: str, arguments: Mapping[str, object]) -> Change | None:
    """What a write tool changes: the change of the REST write the server sends for it, read by
    the REST reader (:mod:`gitvow_gitlab.changes`) from the request built of the tool's
    arguments. ``create_or_update_file`` is the files API, ``push_files`` one commit of its
    files (``POST …/repository/commits``), ``delete_branch``, ``create_tag`` and ``delete_tag``
    the branches and tags APIs. A wiki page is not read (refused: ``change_unestablished``)."""
    build = _WRITES.get(name)
    if build is None:
        return None
    from gitvow.api_change import unestablished

    project = _repo(arguments) or arguments.get("project_id")
    if isinstance(project, int) and not isinstance(project, bool):
        project = str(project)
    if not isinstance(project, str) or not project:
        return unestablished("project_id is not a project path or id")
    try:
        method, below, body = build(arguments)
    except ValueError as exc:
        return unestablished(str(exc))
    from gitvow.request import Request
    from gitvow_gitlab.adapter import GitLabAdapter

    request = Request(method, "gitlab.com", f"/api/v4/projects/{quote(project, safe='')}/repository/{below}",
                      headers={"content-type": "application/json"}, body=json.dumps(body).encode())
    return GitLabAdapter().classify(request).change


def _text(arguments: Mapping[str, object], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} is not a string")
    return value


def _file(arguments: Mapping[str, object]) -> tuple[str, str, dict[str, object]]:
    content = arguments.get("content", "")
    if not isinstance(content, str):
        raise ValueError("content is not a string")
    body: dict[str, object] = {"branch": _text(arguments, "branch"), "content": content,
                               "commit_message": arguments.get("commit_message", "")}
    method = "PUT" if arguments.get("previous_path") or arguments.get("sha") else "POST"
    return method, f"files/{quote(_text(arguments, 'file_path'), safe='')}", body


def _push_files(arguments: Mapping[str, object]) -> tuple[str, str, dict[str, object]]:
    files = arguments.get("files")
    if not isinstance(files, list) or not files:
        raise ValueError("files is not a list of files")
    actions = []
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("file_path"), str) \
                or not isinstance(entry.get("content"), str):
            raise ValueError("a file without a file_path and a content")
        actions.append({"action": "create", "file_path": entry["file_path"], "content": entry["content"]})
    return "POST", "commits", {"branch": _text(arguments, "branch"), "actions": actions,
                               "commit_message": arguments.get("commit_message", "")}


_WRITES: Mapping[str, Callable[[Mapping[str, object]], tuple[str, str, dict[str, object]]]] = {
    "create_or_update_file": _file,
    "push_files": _push_files,
    "delete_branch": lambda a: ("DELETE", f"branches/{quote(_text(a, 'branch'), safe='')}", {}),
    "create_tag": lambda a: ("POST", "tags", {"tag_name": _text(a, "tag_name"), "ref": _text(a, "ref")}),
    "delete_tag": lambda a: ("DELETE", f"tags/{quote(_text(a, 'tag_name'), safe='')}", {}),
}


def _context(name: str, arguments: Mapping[str, object]) -> str | None:
    """The quick-action context of a tool call: from its name, or its ``noteable_type``."""
    kind = f"{name} {arguments.get('noteable_type', '')}".lower().replace(" ", "_")
    if "merge_request" in kind or "mergerequest" in kind:
        return "merge_request"
    if "issue" in kind or "work_item" in kind or "workitem" in kind or "epic" in kind:
        return "issue"
    if "commit" in kind:
        return "commit"
    return None
