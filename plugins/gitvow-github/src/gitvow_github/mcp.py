"""Tool calls to GitHub's MCP server (github/github-mcp-server) → operations.

Each tool maps to what the requests it sends are classified as, so refusing
``merge_pull_request`` and refusing ``PUT …/pulls/N/merge`` say the same thing. The
server's consolidated tools (``issue_write``, ``pull_request_review_write``,
``sub_issue_write``, ``label_write``, ``projects_write``, ``actions_run_trigger``) pick the
operation from their ``method`` argument; an unexpected method is ``unknown``.

Tool names arrive bare (``create_pull_request``) or as the agent names them
(``mcp__github__create_pull_request``); a tool on a server whose name mentions GitHub that
is not in these tables is ``unknown``, never allowed by default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from gitvow.change import with_operations
from gitvow.mcp import split_tool
from gitvow.request import ToolCall
from gitvow.vocabulary import READ, UNKNOWN

if TYPE_CHECKING:
    from gitvow.change import Change

ADAPTER = "github"
R = READ

#: Tools with one operation whatever their arguments.
TOOLS: Mapping[str, str] = {
    # pull requests
    "create_pull_request": "pr.create",
    "merge_pull_request": "pr.merge",
    "update_pull_request": "pr.edit",
    "update_pull_request_branch": "pr.update_branch",
    "request_copilot_review": "pr.edit",
    "add_comment_to_pending_review": "pr.review",
    "create_pending_pull_request_review": "pr.review",
    "submit_pending_pull_request_review": "pr.review",
    "delete_pending_pull_request_review": "pr.review",
    "create_and_submit_pull_request_review": "pr.review",
    "create_pull_request_review": "pr.review",
    "add_pull_request_review_comment": "pr.review",
    "add_pull_request_review_comment_to_pending_review": "pr.review",
    "add_reply_to_pull_request_comment": "pr.review",
    "add_pull_request_comment": "issue.comment",
    "create_pull_request_with_copilot": UNKNOWN,
    # issues and conversation
    "create_issue": "issue.create",
    "update_issue": "issue.edit",
    "add_issue_comment": "issue.comment",
    "add_issue_comment_reaction": "issue.comment",
    "add_issue_reaction": "issue.comment",
    "add_pull_request_reaction": "issue.comment",
    "add_pull_request_comment_reaction": "issue.comment",
    "add_pull_request_review_comment_reaction": "issue.comment",
    "add_discussion_comment": "issue.comment",
    "discussion_comment_write": "issue.comment",
    "delete_discussion_comment": "issue.edit",
    "create_discussion": "issue.create",
    "add_sub_issue": "issue.relate",
    "reprioritize_sub_issue": "issue.relate",
    "remove_sub_issue": UNKNOWN,
    "assign_copilot_to_issue": UNKNOWN,
    "assign_copilot_to_issue_with_intent": UNKNOWN,
    "create_project_issue": "issue.create",
    "add_project_item": "issue.relate",
    "update_project_item": "issue.relate",
    "delete_project_item": UNKNOWN,
    "create_project_status_update": UNKNOWN,
    # repositories, branches, files
    "create_branch": "ref.write",
    "delete_branch": "ref.write",  # and ref.delete: its change deletes the branch
    "push_files": "ref.write",
    "create_or_update_file": "contents.write",
    "delete_file": "contents.write",
    "create_repository": "repo.create",
    "fork_repository": "repo.fork",
    "delete_repository": "repo.delete",
    "add_repository_collaborator": "repo.admin",
    "create_or_update_repository_custom_properties": "repo.admin",
    "create_repository_ruleset": "branch.protect",
    "create_organization_repository_ruleset": UNKNOWN,
    "create_enterprise_repository_ruleset": UNKNOWN,
    "create_or_update_organization_custom_properties": UNKNOWN,
    "create_or_update_enterprise_custom_properties": UNKNOWN,
    "create_org_invitation": UNKNOWN,
    "create_repository_security_advisory": UNKNOWN,
    "create_release": "release.write",
    "delete_release": "release.write",
    "generate_release_notes": R,
    "create_gist": "gist.write",
    "update_gist": "gist.write",
    "star_repository": UNKNOWN,
    "unstar_repository": UNKNOWN,
    "delete_org_package": UNKNOWN,
    "delete_org_package_version": UNKNOWN,
    "delete_user_package": UNKNOWN,
    "delete_user_package_version": UNKNOWN,
    # actions
    "run_workflow": "workflow.dispatch",
    "rerun_workflow_run": "workflow.dispatch",
    "rerun_failed_jobs": "workflow.dispatch",
    "cancel_workflow_run": "workflow.dispatch",
    "delete_workflow_run_logs": "repo.admin",
    # notifications: account state, outside the vocabulary
    "dismiss_notification": UNKNOWN,
    "manage_notification_subscription": UNKNOWN,
    "manage_repository_notification_subscription": UNKNOWN,
    "mark_all_notifications_read": UNKNOWN,
}

#: Consolidated tools: the ``method`` argument picks the operation.
METHOD_TOOLS: Mapping[str, Mapping[str, str]] = {
    "issue_write": {"create": "issue.create", "update": "issue.edit"},
    "sub_issue_write": {"add": "issue.relate", "reprioritize": "issue.relate", "remove": UNKNOWN},
    "label_write": {"create": "label.manage", "update": "label.manage", "delete": "label.manage"},
    "pull_request_review_write": {
        "create": "pr.review", "submit_pending": "pr.review", "delete_pending": "pr.review",
        "resolve_thread": "pr.review", "unresolve_thread": "pr.review",
    },
    "projects_write": {"add_project_item": "issue.relate", "update_project_item": "issue.relate", "delete_project_item": UNKNOWN},
    "actions_run_trigger": {
        "run_workflow": "workflow.dispatch", "rerun_workflow_run": "workflow.dispatch",
        "rerun_failed_jobs": "workflow.dispatch", "cancel_workflow_run": "workflow.dispatch",
        "delete_workflow_run_logs": "repo.admin",
    },
}

#: Tools that only read. Names starting ``get_``, ``list_`` or ``search_`` read too.
READ_TOOLS = frozenset({
    "actions_get", "actions_list", "issue_read", "pull_request_read", "projects_get", "projects_list",
    "download_workflow_run_artifact", "compare_commits", "compare_file_contents", "check_org_membership",
    "custom_properties_read", "find_duplicate", "github_support_docs_search", "enable_toolset",
})
_READ_PREFIXES = ("get_", "list_", "search_")



def classify_mcp(tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
    server, name = split_tool(tool)
    if server is not None and "github" not in server.lower():
        return None
    operation: str | None = TOOLS.get(name)
    if operation is None and name in METHOD_TOOLS:
        method = arguments.get("method")
        operation = METHOD_TOOLS[name].get(method, UNKNOWN) if isinstance(method, str) else UNKNOWN
    if operation is None and (name in READ_TOOLS or name.startswith(_READ_PREFIXES)):
        operation = READ
    if operation is None:
        if server is None:
            return None  # a bare name this server does not have: another server's tool
        operation = UNKNOWN
    owner, repo = arguments.get("owner"), arguments.get("repo")
    target = f"{owner}/{repo}" if isinstance(owner, str) and isinstance(repo, str) and owner and repo else None
    change = tool_change(name, arguments)
    operations = (operation,) if change is None else with_operations((operation,), change)
    return ToolCall(operations, repo=target, adapter=ADAPTER, summary=f"GitHub MCP {name}", change=change)


def tool_change(name: str, arguments: Mapping[str, object]) -> Change | None:
    """What a write tool changes: the :class:`~gitvow.change.Change` of the REST write it
    stands for, read by the same reader (:func:`gitvow_github.changes.rest_change`) from the
    body built of the tool's arguments, so a tool and its request cannot be judged apart.

    ``create_or_update_file`` / ``delete_file`` are the contents API; ``create_branch`` is
    ``POST git/refs``; ``delete_branch`` is ``DELETE git/refs/heads/{branch}`` (``ref.delete``);
    ``push_files`` is a tree with its files and the fast-forward of ``branch`` to the commit on
    it; ``create_pull_request`` and ``update_pull_request`` are ``POST``/``PATCH …/pulls`` (a
    head, a new base); ``merge_pull_request`` is ``PUT …/pulls/N/merge``, whose base is the pull
    request's (no change: its mode or relay decides, as on the wire). Arguments of the wrong
    type are unestablished: refused."""
    writes = _TOOL_WRITES.get(name)
    if writes is None:
        return None
    from gitvow.api_change import merge_changes, unestablished
    from gitvow_github.changes import rest_change

    try:
        requests = writes(arguments)
    except _Unreadable as exc:
        return unestablished(str(exc))
    found = [change for operation_id, path, body in requests
             if (change := rest_change(operation_id, path, json.dumps(body).encode(), "")) is not None]
    if not found:
        return None
    return found[0] if len(found) == 1 else merge_changes(found)


class _Unreadable(ValueError):
    """A tool argument the REST body cannot be built from."""


#: One REST write: its operationId, its path below the API root, its JSON body.
_Write = tuple[str, str, dict[str, object]]


def _text(arguments: Mapping[str, object], key: str, *, required: bool = True) -> str | None:
    value = arguments.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise _Unreadable(f"{key} is not a string")
    return value


def _repo_path(arguments: Mapping[str, object]) -> str:
    return f"/repos/{_text(arguments, 'owner')}/{_text(arguments, 'repo')}"


def _optional(arguments: Mapping[str, object], *keys: str) -> dict[str, object]:
    return {key: arguments[key] for key in keys if arguments.get(key) is not None}


def _encoded(content: str) -> str:
    import base64

    return base64.b64encode(content.encode("utf-8", "surrogateescape")).decode("ascii")


def _contents(arguments: Mapping[str, object], *, delete: bool) -> list[_Write]:
    """The contents API: the server base64-encodes the plain ``content`` it is given."""
    path = _text(arguments, "path")
    body = _optional(arguments, "message", "branch", "sha")
    if delete:
        return [("repos/delete-file", f"{_repo_path(arguments)}/contents/{path}", body)]
    content = _text(arguments, "content", required=False)
    if content is None:
        raise _Unreadable("content is not a string")
    return [("repos/create-or-update-file-contents", f"{_repo_path(arguments)}/contents/{path}",
             {**body, "content": _encoded(content)})]


def _push_files(arguments: Mapping[str, object]) -> list[_Write]:
    """A tree of the files, a commit, and ``branch`` fast-forwarded to it (``force`` false)."""
    branch = _text(arguments, "branch")
    files = arguments.get("files")
    if not isinstance(files, list) or not files:
        raise _Unreadable("files is not a list of files")
    tree: list[dict[str, object]] = []
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) \
                or not isinstance(entry.get("content"), str):
            raise _Unreadable("a file without a path and a content")
        tree.append({"path": entry["path"], "mode": "100644", "type": "blob", "content": entry["content"]})
    repo = _repo_path(arguments)
    return [("git/create-tree", f"{repo}/git/trees", {"tree": tree}),
            ("git/create-commit", f"{repo}/git/commits", _optional(arguments, "message")),
            ("git/update-ref", f"{repo}/git/refs/heads/{branch}", {"force": False})]


def _pull_number(arguments: Mapping[str, object]) -> str:
    number = arguments.get("pullNumber")
    if isinstance(number, bool) or not isinstance(number, int | float | str) or not str(number):
        raise _Unreadable("pullNumber is not a number")
    return str(number)


_TOOL_WRITES: Mapping[str, Callable[[Mapping[str, object]], list[_Write]]] = {
    "create_or_update_file": lambda a: _contents(a, delete=False),
    "delete_file": lambda a: _contents(a, delete=True),
    "create_branch": lambda a: [("git/create-ref", f"{_repo_path(a)}/git/refs",
                                 {"ref": f"refs/heads/{_text(a, 'branch')}"})],
    "delete_branch": lambda a: [("git/delete-ref", f"{_repo_path(a)}/git/refs/heads/{_text(a, 'branch')}", {})],
    "push_files": _push_files,
    "create_pull_request": lambda a: [("pulls/create", f"{_repo_path(a)}/pulls",
                                       _optional(a, "title", "body", "head", "base", "draft"))],
    "update_pull_request": lambda a: [("pulls/update", f"{_repo_path(a)}/pulls/{_pull_number(a)}",
                                       _optional(a, "title", "body", "state", "base"))],
    "merge_pull_request": lambda a: [("pulls/merge", f"{_repo_path(a)}/pulls/{_pull_number(a)}/merge",
                                      _optional(a, "commit_title", "commit_message", "merge_method"))],
}
