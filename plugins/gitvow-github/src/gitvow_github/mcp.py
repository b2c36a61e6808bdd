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

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gitvow.mcp import split_tool
from gitvow.request import ToolCall
from gitvow.vocabulary import READ, UNKNOWN

if TYPE_CHECKING:
    from gitvow.api_change import FileWrite
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
    "delete_branch": "ref.write",
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
    return ToolCall((operation,), repo=target, adapter=ADAPTER, summary=f"GitHub MCP {name}",
                    change=tool_change(name, arguments))


def tool_change(name: str, arguments: Mapping[str, object]) -> Change | None:
    """What a write tool changes, as the requests it sends show it to the proxy: the branch
    ``create_branch`` creates, the head ``create_pull_request`` names, the branch and files
    ``create_or_update_file``, ``push_files`` and ``delete_file`` write (``[branches]``,
    ``[paths]``, ``[secrets]``). Arguments of the wrong type are unestablished: refused."""
    if name not in _CHANGE_TOOLS:
        return None
    from gitvow import api_change as api
    from gitvow.change import CREATED, DEFAULT_BRANCH_REF, FAST_FORWARD, RefChange

    if name == "create_pull_request":
        head = arguments.get("head")
        return api.write_change(heads=(head.rpartition(":")[2],)) if isinstance(head, str) and head else None
    branch = arguments.get("branch")
    if branch is not None and not isinstance(branch, str):
        return api.unestablished("the branch is not a string")
    if name == "create_branch":
        return api.write_change(api.ref_changes(api.branch_refs(branch), CREATED)) if branch else None
    refs = (api.ref_changes(api.branch_refs(branch), FAST_FORWARD) if branch
            else (RefChange(DEFAULT_BRANCH_REF, "", "", FAST_FORWARD),))
    files = _files(name, arguments)
    if files is None:
        return api.unestablished("the files to write are not readable", refs)
    return api.write_change(refs, files)


_CHANGE_TOOLS = frozenset({"create_pull_request", "create_branch", "create_or_update_file", "push_files",
                           "delete_file"})


def _files(name: str, arguments: Mapping[str, object]) -> list[FileWrite] | None:
    from gitvow.api_change import FileWrite

    if name == "push_files":
        entries = arguments.get("files")
        if not isinstance(entries, list):
            return None
        out: list[FileWrite] = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                return None
            content = entry.get("content")
            out.append(FileWrite(entry["path"], content.encode() if isinstance(content, str) else None))
        return out
    path, content = arguments.get("path"), arguments.get("content")
    if not isinstance(path, str) or not path:
        return None
    if name == "delete_file":
        return [FileWrite(path, None)]
    return [FileWrite(path, content.encode() if isinstance(content, str) else None)]
