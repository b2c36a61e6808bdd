"""The operation vocabulary: the one list of things an agent can do, shared by every adapter.

Adapters map wire shapes onto these names; the policy table is keyed by them. A name that is
not here does not exist: policy files naming one are rejected, adapters returning one fail the
contract kit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Operation:
    """One named action, whether it changes anything, and what it means in one line."""

    name: str
    writes: bool
    description: str


UNKNOWN = "unknown"
READ = "read"

_OPERATIONS: tuple[Operation, ...] = (
    # The forge-neutral operations every adapter classifies into, in the order docs/policy.md lists them.
    Operation("read", False, "Read anything: REST GET/HEAD/OPTIONS, a GraphQL query."),
    Operation("auth.login", False, "Sign-in flows (OAuth device code, token exchange); write-surface exempt."),
    Operation("git.fetch", False, "git smart-HTTP fetch or clone (upload-pack)."),
    Operation("git.push", True, "git smart-HTTP push (receive-pack)."),
    Operation("ref.write", True, "Create, move or delete a ref or commit through the API."),
    Operation("ref.force", True, "Move a branch or tag to a commit that does not descend from it (force push), by git or API."),
    Operation("ref.delete", True, "Delete a branch or tag, by git or API."),
    Operation("branch.protect", True, "Create or change branch protection."),
    Operation("issue.create", True, "Open an issue."),
    Operation("issue.edit", True, "Edit, close or reopen an issue."),
    Operation("issue.comment", True, "Comment on an issue or pull request conversation."),
    Operation("label.add", True, "Put an existing label on an issue or pull request."),
    Operation("issue.relate", True, "Link issues: sub-issues, blocked-by edges, projects."),
    Operation("pr.create", True, "Open a pull (merge) request."),
    Operation("pr.edit", True, "Edit a pull request: title, body, draft state."),
    Operation("pr.review", True, "Review a pull request or comment on its diff."),
    Operation("pr.update_branch", True, "Update a pull request's branch from its base."),
    Operation("pr.merge", True, "Merge a pull request, or arm auto-merge."),
    Operation("agent.session", True, "Report agent activity to the tracker (Linear agent sessions)."),
    Operation("attachment.link", True, "Attach a link or file to an issue."),
    Operation("inference.call", False, "Call a model endpoint."),
    Operation("unknown", True, "Anything an adapter cannot classify; always denied."),
    # Dangerous write classes that would otherwise be plain unknown, named so a denial says what it was.
    Operation("repo.create", True, "Create or generate a repository."),
    Operation("repo.delete", True, "Delete or archive a repository."),
    Operation("repo.fork", True, "Fork a repository."),
    Operation("repo.admin", True, "Change repository settings, webhooks, deploy keys, collaborators or invitations."),
    Operation("contents.write", True, "Write files through the contents API, bypassing git push."),
    Operation("release.write", True, "Create, edit or delete a release or its assets."),
    Operation("gist.write", True, "Create, edit or delete a gist or snippet."),
    Operation("workflow.dispatch", True, "Start, re-run or cancel a CI workflow."),
    Operation("secret.write", True, "Create or change secrets and variables."),
    Operation("label.manage", True, "Create, edit or delete the labels a repository offers."),
)

OPERATIONS: dict[str, Operation] = {op.name: op for op in _OPERATIONS}


def get(name: str) -> Operation:
    """The operation called ``name``; KeyError names the vocabulary if there is none."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"unknown operation {name!r}; see `gitvow ops` for the vocabulary") from None


def writes(name: str) -> bool:
    """Whether ``name`` changes anything; names outside the vocabulary count as writes."""
    op = OPERATIONS.get(name)
    return True if op is None else op.writes
