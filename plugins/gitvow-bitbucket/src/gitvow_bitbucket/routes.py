"""Bitbucket's write routes, Cloud (REST 2.0) and Data Center (REST 1.0), each mapped to an operation.

Rows are ``METHOD template operation`` in the core's :class:`gitvow.routing.RouteTable` form
(``unknown`` rows name their reason in :data:`WHY`): every
write of the inventories derived from npm ``@coderabbitai/bitbucket``
(``tests/data/bitbucket_routes.json``) is either mapped here or refused on purpose by a subtree
claim with a reason, never by falling off the table (``tests/test_inventory.py``). Reads
(``GET``/``HEAD``/``OPTIONS``) never reach these tables.

Cloud templates start after ``/2.0``; Data Center templates after ``/rest``, with the API
version written ``latest`` (the wire's ``1.0`` and ``latest`` are the same route).
"""

from __future__ import annotations

import json

from gitvow.request import Request
from gitvow.routing import Match, Route, RouteTable

#: Keys that put a pull-request comment on the diff: Cloud's ``inline``, Data Center's ``anchor``.
_DIFF_KEYS = frozenset({"inline", "anchor"})
_BODY_READ_LIMIT = 256 * 1024


def pr_comment(request: Request, match: Match[Route]) -> tuple[str, ...]:
    """A comment on a pull request's diff is a review (``pr.review``), one on its conversation
    ``issue.comment``; a body that cannot be read is both (the strictest decides)."""
    body = request.body
    if not body.strip():
        return ("issue.comment",)
    if len(body) > _BODY_READ_LIMIT or request.header("content-encoding").strip().lower() not in ("", "identity"):
        return ("issue.comment", "pr.review")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return ("issue.comment", "pr.review")
    if not isinstance(payload, dict):
        return ("issue.comment", "pr.review")
    return ("pr.review",) if _DIFF_KEYS & set(payload) else ("issue.comment",)


WHY = {
    "addon": "Connect app installation is authenticated by the app (JWT), never by an agent",
    "account": "account keys, tokens and properties belong to the user, not to an agent",
    "status": "build statuses and code-insight reports are written by CI services, not agents",
    "watch": "watching and voting change a user's notifications, not the repository: not an agent's business",
    "instance": "instance administration (users, groups, mirrors, logs, migration, signing) is not an agent's business",
    "jira": "creates an issue in Jira, another system gitvow does not see",
}

R = "/repositories/{workspace}/{repo_slug}"
PR = R + "/pullrequests/{pull_request_id}"

CLOUD_ROWS = f"""
DELETE {R}                                                     repo.delete
POST   {R}                                                     repo.create
PUT    {R}                                                     repo.admin
POST   {R}/branch-restrictions                                 branch.protect
PUT    {R}/branch-restrictions/{{id}}                            branch.protect
DELETE {R}/branch-restrictions/{{id}}                            branch.protect
PUT    {R}/branching-model/settings                            repo.admin
POST   {R}/commit/{{commit}}/approve                             pr.review
DELETE {R}/commit/{{commit}}/approve                             pr.review
POST   {R}/commit/{{commit}}/comments                            issue.comment
PUT    {R}/commit/{{commit}}/comments/{{comment_id}}               issue.comment
DELETE {R}/commit/{{commit}}/comments/{{comment_id}}               issue.comment
PUT    {R}/commit/{{commit}}/properties/{{app_key}}/{{property_name}} repo.admin
DELETE {R}/commit/{{commit}}/properties/{{app_key}}/{{property_name}} repo.admin
*      {R}/commit/{{commit}}/reports/**                          unknown status
*      {R}/commit/{{commit}}/statuses/**                         unknown status
POST   {R}/commits                                             read
POST   {R}/commits/{{revision}}                                  read
PUT    {R}/default-reviewers/{{target_username}}                 repo.admin
DELETE {R}/default-reviewers/{{target_username}}                 repo.admin
POST   {R}/deploy-keys                                         repo.admin
PUT    {R}/deploy-keys/{{key_id}}                                repo.admin
DELETE {R}/deploy-keys/{{key_id}}                                repo.admin
POST   {R}/deployments_config/environments/{{environment_uuid}}/variables secret.write
PUT    {R}/deployments_config/environments/{{environment_uuid}}/variables/{{variable_uuid}} secret.write
DELETE {R}/deployments_config/environments/{{environment_uuid}}/variables/{{variable_uuid}} secret.write
POST   {R}/downloads                                           release.write
DELETE {R}/downloads/{{filename}}                                release.write
POST   {R}/environments                                        repo.admin
DELETE {R}/environments/{{environment_uuid}}                     repo.admin
POST   {R}/environments/{{environment_uuid}}/changes             repo.admin
POST   {R}/forks                                               repo.fork
POST   {R}/hooks                                               repo.admin
PUT    {R}/hooks/{{uid}}                                         repo.admin
DELETE {R}/hooks/{{uid}}                                         repo.admin
POST   {R}/issues                                              issue.create
POST   {R}/issues/export                                       repo.admin
POST   {R}/issues/import                                       repo.admin
PUT    {R}/issues/{{issue_id}}                                   issue.edit
DELETE {R}/issues/{{issue_id}}                                   repo.admin
POST   {R}/issues/{{issue_id}}/attachments                       attachment.link
DELETE {R}/issues/{{issue_id}}/attachments/{{path*}}               attachment.link
POST   {R}/issues/{{issue_id}}/changes                           issue.edit
POST   {R}/issues/{{issue_id}}/comments                          issue.comment
PUT    {R}/issues/{{issue_id}}/comments/{{comment_id}}             issue.comment
DELETE {R}/issues/{{issue_id}}/comments/{{comment_id}}             issue.comment
*      {R}/issues/{{issue_id}}/vote                              unknown watch
*      {R}/issues/{{issue_id}}/watch                             unknown watch
*      {R}/permissions-config/**                               repo.admin
POST   {R}/pipelines                                           workflow.dispatch
POST   {R}/pipelines/{{pipeline_uuid}}/stopPipeline              workflow.dispatch
DELETE {R}/pipelines-config/caches                             repo.admin
DELETE {R}/pipelines-config/caches/{{cache_uuid}}                repo.admin
PUT    {R}/pipelines_config                                    repo.admin
PUT    {R}/pipelines_config/build_number                       repo.admin
*      {R}/pipelines_config/schedules/**                       repo.admin
POST   {R}/pipelines_config/schedules                          repo.admin
*      {R}/pipelines_config/ssh/**                             secret.write
POST   {R}/pipelines_config/variables                          secret.write
PUT    {R}/pipelines_config/variables/{{variable_uuid}}          secret.write
DELETE {R}/pipelines_config/variables/{{variable_uuid}}          secret.write
PUT    {R}/properties/{{app_key}}/{{property_name}}                repo.admin
DELETE {R}/properties/{{app_key}}/{{property_name}}                repo.admin
POST   {R}/pullrequests                                        pr.create
PUT    {PR}                                                    pr.edit
POST   {PR}/approve                                            pr.review
DELETE {PR}/approve                                            pr.review
POST   {PR}/comments                                           @pr_comment
PUT    {PR}/comments/{{comment_id}}                              issue.comment
DELETE {PR}/comments/{{comment_id}}                              issue.comment
POST   {PR}/comments/{{comment_id}}/resolve                      pr.review
DELETE {PR}/comments/{{comment_id}}/resolve                      pr.review
POST   {PR}/decline                                            pr.edit
POST   {PR}/merge                                              pr.merge
POST   {PR}/request-changes                                    pr.review
DELETE {PR}/request-changes                                    pr.review
POST   {PR}/tasks                                              pr.review
PUT    {PR}/tasks/{{task_id}}                                    pr.review
DELETE {PR}/tasks/{{task_id}}                                    pr.review
PUT    {PR}/properties/{{app_key}}/{{property_name}}               repo.admin
DELETE {PR}/properties/{{app_key}}/{{property_name}}               repo.admin
POST   {R}/refs/branches                                       ref.write
DELETE {R}/refs/branches/{{name*}}                               ref.write
POST   {R}/refs/tags                                           ref.write
DELETE {R}/refs/tags/{{name*}}                                   ref.write
POST   {R}/src                                                 contents.write
POST   /snippets                                               gist.write
*      /snippets/**                                            gist.write
*      /addon                                                  unknown addon
*      /addon/**                                               unknown addon
*      /teams/{{username}}/pipelines_config/**                   secret.write
*      /users/{{selected_user}}/pipelines_config/**              secret.write
*      /workspaces/{{workspace}}/pipelines-config/**             secret.write
*      /users/{{selected_user}}/**                               unknown account
POST   /workspaces/{{workspace}}/hooks                           repo.admin
*      /workspaces/{{workspace}}/hooks/**                        repo.admin
POST   /workspaces/{{workspace}}/projects                        repo.admin
*      /workspaces/{{workspace}}/projects/**                     repo.admin
"""

P = "/projects/{projectKey}/repos/{repositorySlug}"
DPR = "/api/latest" + P + "/pull-requests/{pullRequestId}"

SERVER_ROWS = f"""
POST   /api/latest/projects                                    repo.admin
*      /api/latest/projects/{{projectKey}}                       repo.admin
POST   /api/latest/projects/{{projectKey}}/repos                 repo.create
DELETE /api/latest{P}                                          repo.delete
PUT    /api/latest{P}                                          repo.admin
POST   /api/latest{P}                                          repo.fork
POST   /api/latest{P}/recreate                                 repo.admin
*      /api/latest{P}/attachments/**                           attachment.link
POST   /api/latest{P}/branches                                 ref.write
PUT    /api/latest{P}/branches/default                         repo.admin
PUT    /api/latest{P}/default-branch                           repo.admin
PUT    /api/latest{P}/browse/{{path*}}                           contents.write
*      /api/latest{P}/commits/{{commitId}}/builds                unknown status
*      /api/latest{P}/commits/{{commitId}}/deployments           unknown status
POST   /api/latest{P}/commits/{{commitId}}/comments              issue.comment
PUT    /api/latest{P}/commits/{{commitId}}/comments/{{commentId}}  issue.comment
DELETE /api/latest{P}/commits/{{commitId}}/comments/{{commentId}}  issue.comment
*      /api/latest{P}/commits/{{commitId}}/watch                 unknown watch
*      /api/latest{P}/watch                                    unknown watch
*      /api/latest{P}/hook-scripts/**                          repo.admin
*      /api/latest{P}/labels                                   label.manage
*      /api/latest{P}/labels/**                                label.manage
*      /api/latest{P}/permissions/**                           repo.admin
*      /api/latest{P}/secret-scanning/**                       repo.admin
*      /api/latest{P}/settings/**                              repo.admin
*      /api/latest{P}/webhooks                                 repo.admin
*      /api/latest{P}/webhooks/**                              repo.admin
POST   /api/latest{P}/pull-requests                            pr.create
PUT    {DPR}                                                   pr.edit
DELETE {DPR}                                                   pr.edit
POST   {DPR}/approve                                           pr.review
DELETE {DPR}/approve                                           pr.review
POST   {DPR}/auto-merge                                        pr.merge
DELETE {DPR}/auto-merge                                        pr.edit
POST   {DPR}/blocker-comments                                  pr.review
PUT    {DPR}/blocker-comments/{{commentId}}                      pr.review
DELETE {DPR}/blocker-comments/{{commentId}}                      pr.review
POST   {DPR}/comments                                          @pr_comment
PUT    {DPR}/comments/{{commentId}}                              issue.comment
DELETE {DPR}/comments/{{commentId}}                              issue.comment
POST   {DPR}/comments/{{commentId}}/apply-suggestion             contents.write
POST   {DPR}/decline                                           pr.edit
POST   {DPR}/merge                                             pr.merge
POST   {DPR}/participants                                      pr.edit
PUT    {DPR}/participants/{{userSlug}}                           pr.review
DELETE {DPR}/participants/{{userSlug}}                           pr.edit
POST   {DPR}/reopen                                            pr.edit
PUT    {DPR}/review                                            pr.review
DELETE {DPR}/review                                            pr.review
*      {DPR}/watch                                             unknown watch
POST   /git/latest{P}/pull-requests/{{pullRequestId}}/rebase     pr.update_branch
POST   /git/latest{P}/tags                                     ref.write
DELETE /git/latest{P}/tags/{{name*}}                             ref.write
*      /branch-utils/latest{P}/branches                        ref.write
*      /branch-permissions/latest{P}/restrictions              branch.protect
*      /branch-permissions/latest{P}/restrictions/**           branch.protect
*      /branch-permissions/latest/projects/{{projectKey}}/restrictions     branch.protect
*      /branch-permissions/latest/projects/{{projectKey}}/restrictions/**  branch.protect
*      /required-builds/latest{P}/condition                    branch.protect
*      /required-builds/latest{P}/condition/**                 branch.protect
*      /default-reviewers/latest{P}/**                         repo.admin
*      /default-reviewers/latest/projects/{{projectKey}}/**      repo.admin
*      /default-tasks/latest{P}/**                             repo.admin
*      /default-tasks/latest/projects/{{projectKey}}/**          repo.admin
*      /insights/latest{P}/**                                  unknown status
*      /build-status/latest/commits/{{commitId}}                 unknown status
POST   /build-status/latest/commits/stats                      read
*      /keys/latest{P}/**                                      repo.admin
*      /keys/latest/projects/{{projectKey}}/**                   repo.admin
*      /access-tokens/latest{P}                                secret.write
*      /access-tokens/latest{P}/**                             secret.write
*      /access-tokens/latest/projects/{{projectKey}}             secret.write
*      /access-tokens/latest/projects/{{projectKey}}/{{tokenId}}   secret.write
*      /access-tokens/latest/users/**                          unknown account
*      /comment-likes/latest{P}/**                             issue.comment
*      /sync/latest{P}                                         ref.write
*      /sync/latest{P}/**                                      ref.write
*      /jira/**                                                unknown jira
POST   /api/latest/markup/preview                              read
*      /api/latest/projects/{{projectKey}}/**                    repo.admin
*      /api/latest/users/**                                    unknown account
*      /api/latest/users                                       unknown account
*      /api/latest/admin/**                                    unknown instance
*      /api/latest/hook-scripts                                unknown instance
*      /api/latest/hook-scripts/**                             unknown instance
*      /api/latest/logs/**                                     unknown instance
*      /api/latest/migration/**                                unknown instance
*      /api/latest/secret-scanning/**                          unknown instance
*      /api/latest/signing/**                                  unknown instance
*      /api/latest/system-signing/**                           unknown instance
*      /admin                                                  unknown instance
*      /audit/**                                               unknown instance
*      /mirroring/**                                           unknown instance
*      /policies/**                                            unknown instance
*      /gpg/**                                                 unknown account
*      /ssh/**                                                 unknown account
*      /keys/latest/ssh/**                                     unknown account
"""


# Literals fold case: a front end that routes /2.0/REPOSITORIES/… must not make a write unknown
# here and a read without its repository there.
RESOLVERS = {"pr_comment": pr_comment}
CLOUD = RouteTable.from_rows(CLOUD_ROWS, reasons=WHY, resolvers=RESOLVERS, fold_case=True)
SERVER = RouteTable.from_rows(SERVER_ROWS, reasons=WHY, resolvers=RESOLVERS, fold_case=True)
