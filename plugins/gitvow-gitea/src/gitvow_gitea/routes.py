"""Gitea's (and Forgejo's) write routes under ``/api/v1`` and the operations they perform.

Reads need no table: every ``GET``, ``HEAD`` and ``OPTIONS`` is ``read``. Every other method
is looked up here. A route is either mapped to an operation or refused *on purpose* as
``unknown`` with the reason shown to the agent; a route in neither list is refused as "not a
known Gitea route". ``tests/test_inventory.py`` holds this table against every write route of
Gitea's swagger description (derived from npm ``gitea-js``), so a route Gitea adds fails the
build until someone decides what it is.

Decisions that are not obvious from the path:

* Issue labels (``…/issues/{index}/labels``, add, replace, remove, clear) are ``label.add``;
  the labels a repository offers (``…/labels``) are ``label.manage``.
* Adding a dependency or block is ``issue.relate``; removing one stays refused, as
  ``issue.relate`` only adds links. Deleting an issue or a comment is refused too.
* Reactions on issues and comments are ``issue.comment``: conversation, nothing more.
* Milestones group issues the way a Linear project does: creating or editing one is
  ``issue.relate`` (as ``projectCreate`` is); deleting one is refused.
* ``DELETE …/pulls/{index}/merge`` cancels a scheduled merge and ``…/pulls/{index}/update``
  merges the base into the head: ``pr.merge`` (relayed) and ``pr.update_branch``.
* ``POST /markdown``, ``/markdown/raw`` and ``/markup`` render text and store nothing: ``read``.
* Wikis are git repositories, so their pages are ``contents.write``; ``diffpatch`` commits a
  patch and is ``contents.write`` too; ``merge-upstream`` and ``mirror-sync`` move branches
  and are ``ref.write``.
* Workflow dispatch (Gitea 1.24+, Forgejo) is not in ``gitea-js`` 1.23's description; it is
  listed below the inventory routes as an extra.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitvow.vocabulary import UNKNOWN


@dataclass(frozen=True, slots=True)
class Route:
    """One write route: method, swagger-style template, operation, and why if it is refused."""

    method: str
    template: str
    operation: str
    why: str = ""


R = "/repos/{owner}/{repo}"
ISSUE = f"{R}/issues/{{index}}"
PULL = f"{R}/pulls/{{index}}"

_ADMIN = "site administration is not something an agent does"
_ACCOUNT = "account settings (keys, tokens, e-mail, follows, blocks, stars) are the user's, not an agent's"
_ORG = "organization administration (members, teams, settings) is not something an agent does"
_NOTIFY = "notification and subscription state belongs to the user"
_UNLINK = "unlinking issues stays denied; only adding a link is issue.relate"
_DELETE = "deleting issues or comments destroys conversation; not in the vocabulary"
_STATUS = "commit statuses are set by CI, not by an agent"
_FEDERATION = "federation inbox traffic is server to server"
_PACKAGES = "package registry deletions are not in the vocabulary"
_MILESTONE_DELETE = "deleting a milestone unlinks every issue in it"

WRITE_ROUTES: tuple[Route, ...] = (
    # --- /repos/{owner}/{repo}: the repository itself
    Route("DELETE", R, "repo.delete"),
    Route("PATCH", R, "repo.admin"),
    Route("POST", "/repos/migrate", "repo.create"),
    Route("POST", "/repos/{template_owner}/{template_repo}/generate", "repo.create"),
    Route("POST", f"{R}/forks", "repo.fork"),
    Route("POST", f"{R}/transfer", "repo.admin"),
    Route("POST", f"{R}/transfer/accept", "repo.admin"),
    Route("POST", f"{R}/transfer/reject", "repo.admin"),
    Route("POST", f"{R}/avatar", "repo.admin"),
    Route("DELETE", f"{R}/avatar", "repo.admin"),
    Route("PUT", f"{R}/topics", "repo.admin"),
    Route("PUT", f"{R}/topics/{{topic}}", "repo.admin"),
    Route("DELETE", f"{R}/topics/{{topic}}", "repo.admin"),
    Route("PUT", f"{R}/collaborators/{{collaborator}}", "repo.admin"),
    Route("DELETE", f"{R}/collaborators/{{collaborator}}", "repo.admin"),
    Route("PUT", f"{R}/teams/{{team}}", "repo.admin"),
    Route("DELETE", f"{R}/teams/{{team}}", "repo.admin"),
    Route("POST", f"{R}/hooks", "repo.admin"),
    Route("PATCH", f"{R}/hooks/{{id}}", "repo.admin"),
    Route("DELETE", f"{R}/hooks/{{id}}", "repo.admin"),
    Route("POST", f"{R}/hooks/{{id}}/tests", "repo.admin"),
    Route("PATCH", f"{R}/hooks/git/{{id}}", "repo.admin"),
    Route("DELETE", f"{R}/hooks/git/{{id}}", "repo.admin"),
    Route("POST", f"{R}/keys", "repo.admin"),
    Route("DELETE", f"{R}/keys/{{id}}", "repo.admin"),
    Route("POST", f"{R}/push_mirrors", "repo.admin"),
    Route("DELETE", f"{R}/push_mirrors/{{name}}", "repo.admin"),
    Route("POST", f"{R}/push_mirrors-sync", "repo.admin"),
    Route("PUT", f"{R}/actions/secrets/{{secretname}}", "secret.write"),
    Route("DELETE", f"{R}/actions/secrets/{{secretname}}", "secret.write"),
    Route("POST", f"{R}/actions/variables/{{variablename}}", "secret.write"),
    Route("PUT", f"{R}/actions/variables/{{variablename}}", "secret.write"),
    Route("DELETE", f"{R}/actions/variables/{{variablename}}", "secret.write"),
    # --- refs, protection, contents
    Route("POST", f"{R}/branches", "ref.write"),
    Route("PATCH", f"{R}/branches/{{branch*}}", "ref.write"),
    Route("DELETE", f"{R}/branches/{{branch*}}", "ref.write"),
    Route("POST", f"{R}/tags", "ref.write"),
    Route("DELETE", f"{R}/tags/{{tag*}}", "ref.write"),
    Route("POST", f"{R}/merge-upstream", "ref.write"),
    Route("POST", f"{R}/mirror-sync", "ref.write"),
    Route("POST", f"{R}/branch_protections", "branch.protect"),
    Route("POST", f"{R}/branch_protections/priority", "branch.protect"),
    Route("PATCH", f"{R}/branch_protections/{{name}}", "branch.protect"),
    Route("DELETE", f"{R}/branch_protections/{{name}}", "branch.protect"),
    Route("POST", f"{R}/tag_protections", "branch.protect"),
    Route("PATCH", f"{R}/tag_protections/{{id}}", "branch.protect"),
    Route("DELETE", f"{R}/tag_protections/{{id}}", "branch.protect"),
    Route("POST", f"{R}/contents", "contents.write"),
    Route("POST", f"{R}/contents/{{filepath*}}", "contents.write"),
    Route("PUT", f"{R}/contents/{{filepath*}}", "contents.write"),
    Route("DELETE", f"{R}/contents/{{filepath*}}", "contents.write"),
    Route("POST", f"{R}/diffpatch", "contents.write"),
    Route("POST", f"{R}/wiki/new", "contents.write"),
    Route("PATCH", f"{R}/wiki/page/{{pageName*}}", "contents.write"),
    Route("DELETE", f"{R}/wiki/page/{{pageName*}}", "contents.write"),
    # --- releases
    Route("POST", f"{R}/releases", "release.write"),
    Route("PATCH", f"{R}/releases/{{id}}", "release.write"),
    Route("DELETE", f"{R}/releases/{{id}}", "release.write"),
    Route("DELETE", f"{R}/releases/tags/{{tag*}}", "release.write"),
    Route("POST", f"{R}/releases/{{id}}/assets", "release.write"),
    Route("PATCH", f"{R}/releases/{{id}}/assets/{{attachment_id}}", "release.write"),
    Route("DELETE", f"{R}/releases/{{id}}/assets/{{attachment_id}}", "release.write"),
    # --- labels and milestones
    Route("POST", f"{R}/labels", "label.manage"),
    Route("PATCH", f"{R}/labels/{{id}}", "label.manage"),
    Route("DELETE", f"{R}/labels/{{id}}", "label.manage"),
    Route("POST", f"{R}/milestones", "issue.relate"),
    Route("PATCH", f"{R}/milestones/{{id}}", "issue.relate"),
    Route("DELETE", f"{R}/milestones/{{id}}", UNKNOWN, _MILESTONE_DELETE),
    # --- issues
    Route("POST", f"{R}/issues", "issue.create"),
    Route("PATCH", ISSUE, "issue.edit"),
    Route("DELETE", ISSUE, UNKNOWN, _DELETE),
    Route("POST", f"{ISSUE}/comments", "issue.comment"),
    Route("PATCH", f"{ISSUE}/comments/{{id}}", "issue.comment"),
    Route("DELETE", f"{ISSUE}/comments/{{id}}", UNKNOWN, _DELETE),
    Route("PATCH", f"{R}/issues/comments/{{id}}", "issue.comment"),
    Route("DELETE", f"{R}/issues/comments/{{id}}", UNKNOWN, _DELETE),
    Route("POST", f"{R}/issues/comments/{{id}}/reactions", "issue.comment"),
    Route("DELETE", f"{R}/issues/comments/{{id}}/reactions", "issue.comment"),
    Route("POST", f"{R}/issues/comments/{{id}}/assets", "attachment.link"),
    Route("PATCH", f"{R}/issues/comments/{{id}}/assets/{{attachment_id}}", "attachment.link"),
    Route("DELETE", f"{R}/issues/comments/{{id}}/assets/{{attachment_id}}", "attachment.link"),
    Route("POST", f"{ISSUE}/reactions", "issue.comment"),
    Route("DELETE", f"{ISSUE}/reactions", "issue.comment"),
    Route("POST", f"{ISSUE}/assets", "attachment.link"),
    Route("PATCH", f"{ISSUE}/assets/{{attachment_id}}", "attachment.link"),
    Route("DELETE", f"{ISSUE}/assets/{{attachment_id}}", "attachment.link"),
    Route("POST", f"{ISSUE}/labels", "label.add"),
    Route("PUT", f"{ISSUE}/labels", "label.add"),
    Route("DELETE", f"{ISSUE}/labels", "label.add"),
    Route("DELETE", f"{ISSUE}/labels/{{id}}", "label.add"),
    Route("POST", f"{ISSUE}/blocks", "issue.relate"),
    Route("DELETE", f"{ISSUE}/blocks", UNKNOWN, _UNLINK),
    Route("POST", f"{ISSUE}/dependencies", "issue.relate"),
    Route("DELETE", f"{ISSUE}/dependencies", UNKNOWN, _UNLINK),
    Route("POST", f"{ISSUE}/deadline", "issue.edit"),
    Route("POST", f"{ISSUE}/pin", "issue.edit"),
    Route("DELETE", f"{ISSUE}/pin", "issue.edit"),
    Route("PATCH", f"{ISSUE}/pin/{{position}}", "issue.edit"),
    Route("POST", f"{ISSUE}/stopwatch/start", "issue.edit"),
    Route("POST", f"{ISSUE}/stopwatch/stop", "issue.edit"),
    Route("DELETE", f"{ISSUE}/stopwatch/delete", "issue.edit"),
    Route("POST", f"{ISSUE}/times", "issue.edit"),
    Route("DELETE", f"{ISSUE}/times", "issue.edit"),
    Route("DELETE", f"{ISSUE}/times/{{id}}", "issue.edit"),
    Route("PUT", f"{ISSUE}/subscriptions/{{user}}", UNKNOWN, _NOTIFY),
    Route("DELETE", f"{ISSUE}/subscriptions/{{user}}", UNKNOWN, _NOTIFY),
    # --- pull requests
    Route("POST", f"{R}/pulls", "pr.create"),
    Route("PATCH", PULL, "pr.edit"),
    Route("POST", f"{PULL}/merge", "pr.merge"),
    Route("DELETE", f"{PULL}/merge", "pr.merge"),
    Route("POST", f"{PULL}/update", "pr.update_branch"),
    Route("POST", f"{PULL}/requested_reviewers", "pr.edit"),
    Route("DELETE", f"{PULL}/requested_reviewers", "pr.edit"),
    Route("POST", f"{PULL}/reviews", "pr.review"),
    Route("POST", f"{PULL}/reviews/{{id}}", "pr.review"),
    Route("DELETE", f"{PULL}/reviews/{{id}}", "pr.review"),
    Route("POST", f"{PULL}/reviews/{{id}}/dismissals", "pr.review"),
    Route("POST", f"{PULL}/reviews/{{id}}/undismissals", "pr.review"),
    # --- repository-level odds and ends refused on purpose
    Route("POST", f"{R}/statuses/{{sha}}", UNKNOWN, _STATUS),
    Route("PUT", f"{R}/subscription", UNKNOWN, _NOTIFY),
    Route("DELETE", f"{R}/subscription", UNKNOWN, _NOTIFY),
    Route("PUT", f"{R}/notifications", UNKNOWN, _NOTIFY),
    # --- outside a repository
    Route("POST", "/user/repos", "repo.create"),
    Route("POST", "/orgs/{org}/repos", "repo.create"),
    Route("POST", "/org/{org}/repos", "repo.create"),
    Route("PUT", "/user/actions/secrets/{secretname}", "secret.write"),
    Route("DELETE", "/user/actions/secrets/{secretname}", "secret.write"),
    Route("POST", "/user/actions/variables/{variablename}", "secret.write"),
    Route("PUT", "/user/actions/variables/{variablename}", "secret.write"),
    Route("DELETE", "/user/actions/variables/{variablename}", "secret.write"),
    Route("PUT", "/orgs/{org}/actions/secrets/{secretname}", "secret.write"),
    Route("DELETE", "/orgs/{org}/actions/secrets/{secretname}", "secret.write"),
    Route("POST", "/orgs/{org}/actions/variables/{variablename}", "secret.write"),
    Route("PUT", "/orgs/{org}/actions/variables/{variablename}", "secret.write"),
    Route("DELETE", "/orgs/{org}/actions/variables/{variablename}", "secret.write"),
    Route("POST", "/orgs/{org}/labels", "label.manage"),
    Route("PATCH", "/orgs/{org}/labels/{id}", "label.manage"),
    Route("DELETE", "/orgs/{org}/labels/{id}", "label.manage"),
    Route("PUT", "/teams/{id}/repos/{org}/{repo}", "repo.admin"),
    Route("DELETE", "/teams/{id}/repos/{org}/{repo}", "repo.admin"),
    Route("POST", "/markdown", "read"),
    Route("POST", "/markdown/raw", "read"),
    Route("POST", "/markup", "read"),
    # Whole areas refused as a block: every write method under them.
    Route("*", "/admin/**", UNKNOWN, _ADMIN),
    Route("*", "/user/**", UNKNOWN, _ACCOUNT),
    Route("*", "/users/**", UNKNOWN, _ACCOUNT),
    Route("*", "/orgs/**", UNKNOWN, _ORG),
    Route("POST", "/orgs", UNKNOWN, _ORG),
    Route("*", "/teams/**", UNKNOWN, _ORG),
    Route("*", "/notifications/**", UNKNOWN, _NOTIFY),
    Route("PUT", "/notifications", UNKNOWN, _NOTIFY),
    Route("*", "/activitypub/**", UNKNOWN, _FEDERATION),
    Route("*", "/packages/**", UNKNOWN, _PACKAGES),
)

#: Routes newer than the inventory (Gitea 1.24+, Forgejo 7+), each with its source.
EXTRA_ROUTES: tuple[Route, ...] = (
    # Gitea 1.24 and Forgejo (where the parameter is the workflow file name): workflow_dispatch.
    Route("POST", f"{R}/actions/workflows/{{workflow_id}}/dispatches", "workflow.dispatch"),
    # Gitea 1.24: turn a workflow on or off, delete a run.
    Route("PUT", f"{R}/actions/workflows/{{workflow_id}}/enable", "workflow.dispatch"),
    Route("PUT", f"{R}/actions/workflows/{{workflow_id}}/disable", "workflow.dispatch"),
    Route("DELETE", f"{R}/actions/runs/{{run}}", "workflow.dispatch"),
)

ROUTES: tuple[Route, ...] = WRITE_ROUTES + EXTRA_ROUTES
