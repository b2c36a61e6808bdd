"""``tea`` (Gitea's CLI) command lines → operations, for the agent gate.

Only the subcommands that map cleanly are recognised; anything else returns None and is left
to the gate's own rules. ``tea`` accepts plural and short aliases (``pulls``/``pull``/``pr``,
``issues``/``issue``/``i``), and ``--repo``/``-r OWNER/REPO`` names the repository.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow.argv import option_value, positionals
from gitvow.request import ToolCall

_GROUPS: Mapping[str, str] = {
    "pulls": "pr", "pull": "pr", "pr": "pr",
    "issues": "issue", "issue": "issue", "i": "issue",
    "comment": "comment", "c": "comment",
    "labels": "label", "label": "label",
    "releases": "release", "release": "release", "r": "release",
    "repos": "repo", "repo": "repo",
}  # fmt: skip
_READS = frozenset({"list", "ls", "view", "show", "search"})
_ACTIONS: Mapping[tuple[str, str], str] = {
    ("pr", "create"): "pr.create",
    ("pr", "c"): "pr.create",
    ("pr", "merge"): "pr.merge",
    ("pr", "m"): "pr.merge",
    ("pr", "approve"): "pr.review",
    ("pr", "lgtm"): "pr.review",
    ("pr", "a"): "pr.review",
    ("pr", "reject"): "pr.review",
    ("pr", "review"): "pr.review",
    ("pr", "close"): "pr.edit",
    ("pr", "reopen"): "pr.edit",
    ("pr", "open"): "pr.edit",
    ("pr", "edit"): "pr.edit",
    ("pr", "checkout"): "git.fetch",
    ("issue", "create"): "issue.create",
    ("issue", "c"): "issue.create",
    ("issue", "close"): "issue.edit",
    ("issue", "reopen"): "issue.edit",
    ("issue", "open"): "issue.edit",
    ("issue", "edit"): "issue.edit",
    ("issue", "e"): "issue.edit",
    ("label", "create"): "label.manage",
    ("label", "update"): "label.manage",
    ("label", "delete"): "label.manage",
    ("release", "create"): "release.write",
    ("release", "edit"): "release.write",
    ("release", "delete"): "release.write",
    ("repo", "create"): "repo.create",
    ("repo", "create-from-template"): "repo.create",
    ("repo", "fork"): "repo.fork",
    ("repo", "migrate"): "repo.create",
    ("repo", "delete"): "repo.delete",
}
# Global flags that take a value, so the value is not mistaken for a subcommand.
_VALUE_FLAGS = frozenset({"--repo", "-r", "--login", "-l", "--remote", "-R", "--output", "-o"})



def classify_tea(argv: Sequence[str]) -> ToolCall | None:
    """Operations a ``tea`` command performs, or None if it is not one this module knows."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "tea":
        return None
    args = list(argv[1:])
    words = positionals(args, _VALUE_FLAGS)
    if not words or words[0] not in _GROUPS:
        return None
    group = _GROUPS[words[0]]
    repo = option_value(args, ("--repo", "-r"))
    if group == "comment":
        return ToolCall(("issue.comment",), repo=repo, adapter="gitea", summary="tea comment")
    action = words[1] if len(words) > 1 else "list"
    operation = _ACTIONS.get((group, action))
    if operation is None and (action in _READS or action.isdigit()):
        operation = "read"
    if operation is None:
        return None
    return ToolCall((operation,), repo=repo, adapter="gitea", summary=f"tea {words[0]} {action}")
