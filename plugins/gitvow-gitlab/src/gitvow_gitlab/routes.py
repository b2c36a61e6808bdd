"""GitLab REST v4 write routes → operations, as one reviewed table.

Every ``GET``/``HEAD``/``OPTIONS`` is ``read`` and never reaches this table. Each write route
maps to operations of the vocabulary, to a *resolver* (``@name``: the operation depends on
the body, e.g. a merge-request discussion with a diff ``position`` is a review), or to
``unknown`` with a reason the agent is shown. A write that matches no row is ``unknown``
too, with the generic "no GitLab route" note; the completeness test checks that every write
route in the committed inventory (``data/rest_routes.tsv``) hits a row here, so "unmatched"
only ever means "not a route a client is known to send".

Templates are relative to ``/api/v4``. ``:project`` binds the project (numeric id or
URL-encoded full path) and is what the repository is read from; ``:group`` binds a group.
A final ``*`` matches zero or more segments and is used only for families whose every
member is refused for the same reason.

Choices worth knowing (they are not all obvious from the names):

- Notes on issues, merge requests, commits and epics are ``issue.comment``; a merge-request
  *discussion* that carries a diff ``position`` is ``pr.review`` (``@mr_discussion``), and so
  are replies in merge-request discussion threads, draft notes, approvals and resolving.
- ``PUT`` on an issue or merge request that only adds labels (``add_labels``) is
  ``label.add``; one that sets ``labels`` (which replaces the set, so it may remove some) or
  also changes other fields is that edit plus ``label.add`` (``@issue_update``, ``@mr_update``).
- ``POST /projects/:id/labels`` creates a project label: ``label.manage``, not ``label.add``
  (a near miss: it changes what labels exist, not an issue).
- Adding a merge request to a merge train merges it: ``pr.merge``, relayed like the merge API.
- Deleting issues, merge requests and comments, unlinking issues, moving or cloning issues
  across projects, notification/to-do/star state, and user or instance administration are
  ``unknown`` with a reason: there is no agent operation for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitvow.routing import RouteTrie
from gitvow.vocabulary import OPERATIONS, UNKNOWN

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

#: Why a route is refused as ``unknown``; the text ends up in the one-line denial.
REASONS: dict[str, str] = {
    "delete": "deleting issues, merge requests, epics or comments is not an agent operation",
    "unlink": "removing issue or epic links stays denied: issue.relate only adds links",
    "cross_project": "moving or cloning an issue into another project crosses repositories",
    "notify": "notification, to-do and star state of the token's user is not an agent operation",
    "status": "commit statuses and status-check responses are written by CI services, not agents",
    "packages": "package, container and dependency-proxy registries are not agent operations",
    "ops": "alerts, vulnerabilities, Terraform state and analytics are not agent operations",
    "group": "creating, moving, restoring or deleting groups is not an agent operation",
    "user": "user accounts, keys, tokens and preferences are not agent operations",
    "admin": "instance administration is not an agent operation",
    "runner": "registering, verifying or removing runners is not an agent operation",
    "gitbeaker": "not a GitLab REST route (a path only @gitbeaker/core builds)",
}

# method(s)  template  operation(s) | @resolver | unknown:reason
TABLE = """
# --- merge requests -------------------------------------------------------------------
POST           /projects/:project/merge_requests                                      pr.create
PUT            /projects/:project/merge_requests/:iid                                 @mr_update
DELETE         /projects/:project/merge_requests/:iid                                 unknown:delete
PUT            /projects/:project/merge_requests/:iid/merge                           pr.merge
POST           /projects/:project/merge_trains/merge_requests/:iid                    pr.merge
POST           /projects/:project/merge_requests/:iid/cancel_merge_when_pipeline_succeeds  pr.edit
PUT            /projects/:project/merge_requests/:iid/rebase                          pr.update_branch
PUT            /projects/:project/merge_requests/:iid/merge_ref                       ref.write
POST           /projects/:project/merge_requests/:iid/approve                         pr.review
POST           /projects/:project/merge_requests/:iid/unapprove                       pr.review
PUT,POST       /projects/:project/merge_requests/:iid/reset_approvals                 pr.review
POST           /projects/:project/merge_requests/:iid/notes                           issue.comment
PUT            /projects/:project/merge_requests/:iid/notes/:note                     issue.comment
DELETE         /projects/:project/merge_requests/:iid/notes/:note                     unknown:delete
POST           /projects/:project/merge_requests/:iid/discussions                     @mr_discussion
PUT            /projects/:project/merge_requests/:iid/discussions/:discussion         pr.review
POST           /projects/:project/merge_requests/:iid/discussions/:discussion/notes   pr.review
PUT            /projects/:project/merge_requests/:iid/discussions/:discussion/notes/:note  pr.review
DELETE         /projects/:project/merge_requests/:iid/discussions/:discussion/notes/:note  unknown:delete
POST           /projects/:project/merge_requests/:iid/draft_notes                     pr.review
POST,PUT,DELETE /projects/:project/merge_requests/:iid/draft_notes/:draft             pr.review
PUT            /projects/:project/merge_requests/:iid/draft_notes/:draft/publish      pr.review
POST           /projects/:project/merge_requests/:iid/draft_notes/bulk_publish        pr.review
POST           /projects/:project/merge_requests/:iid/award_emoji                     issue.comment
DELETE         /projects/:project/merge_requests/:iid/award_emoji/:award              issue.comment
POST           /projects/:project/merge_requests/:iid/notes/:note/award_emoji         issue.comment
DELETE         /projects/:project/merge_requests/:iid/notes/:note/award_emoji/:award  issue.comment
POST,DELETE    /projects/:project/merge_requests/:iid/context_commits                 pr.edit
POST           /projects/:project/merge_requests/:iid/time_estimate                   pr.edit
POST           /projects/:project/merge_requests/:iid/reset_time_estimate             pr.edit
POST           /projects/:project/merge_requests/:iid/add_spent_time                  pr.edit
POST           /projects/:project/merge_requests/:iid/reset_spent_time                pr.edit
POST           /projects/:project/merge_requests/:iid/subscribe                       unknown:notify
POST           /projects/:project/merge_requests/:iid/unsubscribe                     unknown:notify
POST           /projects/:project/merge_requests/:iid/todo                            unknown:notify
POST           /projects/:project/merge_requests/:iid/pipelines                       workflow.dispatch
POST           /projects/:project/merge_requests/:iid/status_check_responses          unknown:status
POST           /projects/:project/merge_requests/:iid/approval_rules                  repo.admin
PUT,DELETE     /projects/:project/merge_requests/:iid/approval_rules/:rule            repo.admin
PUT            /suggestions/:suggestion/apply                                         ref.write
PUT            /suggestions/batch_apply                                               ref.write

# --- issues -----------------------------------------------------------------------------
POST           /projects/:project/issues                                              issue.create
PUT            /projects/:project/issues/:iid                                         @issue_update
DELETE         /projects/:project/issues/:iid                                         unknown:delete
PUT            /projects/:project/issues/:iid/reorder                                 issue.edit
POST           /projects/:project/issues/:iid/time_estimate                           issue.edit
POST           /projects/:project/issues/:iid/reset_time_estimate                     issue.edit
POST           /projects/:project/issues/:iid/add_spent_time                          issue.edit
POST           /projects/:project/issues/:iid/reset_spent_time                        issue.edit
POST           /projects/:project/issues/:iid/move                                    unknown:cross_project
POST           /projects/:project/issues/:iid/clone                                   unknown:cross_project
POST           /projects/:project/issues/:iid/subscribe                               unknown:notify
POST           /projects/:project/issues/:iid/unsubscribe                             unknown:notify
POST           /projects/:project/issues/:iid/todo                                    unknown:notify
POST           /projects/:project/issues/:iid/notes                                   issue.comment
PUT            /projects/:project/issues/:iid/notes/:note                             issue.comment
DELETE         /projects/:project/issues/:iid/notes/:note                             unknown:delete
POST           /projects/:project/issues/:iid/discussions                             issue.comment
POST           /projects/:project/issues/:iid/discussions/:discussion/notes           issue.comment
PUT            /projects/:project/issues/:iid/discussions/:discussion/notes/:note     issue.comment
DELETE         /projects/:project/issues/:iid/discussions/:discussion/notes/:note     unknown:delete
POST           /projects/:project/issues/:iid/award_emoji                             issue.comment
DELETE         /projects/:project/issues/:iid/award_emoji/:award                      issue.comment
POST           /projects/:project/issues/:iid/notes/:note/award_emoji                 issue.comment
DELETE         /projects/:project/issues/:iid/notes/:note/award_emoji/:award          issue.comment
POST           /projects/:project/issues/:iid/links                                   issue.relate
DELETE         /projects/:project/issues/:iid/links/:link                             unknown:unlink
POST           /projects/:project/issues/:iid/metric_images                           attachment.link
PUT            /projects/:project/issues/:iid/metric_images/:image                    attachment.link
DELETE         /projects/:project/issues/:iid/metric_images/:image                    unknown:delete
POST           /projects/:project/uploads                                             attachment.link
DELETE         /projects/:project/uploads/:secret/:filename                           repo.admin

# --- epics (group-level issues) ---------------------------------------------------------
POST           /groups/:group/epics                                                   issue.create
PUT            /groups/:group/epics/:iid                                              @issue_update
DELETE         /groups/:group/epics/:iid                                              unknown:delete
POST,PUT       /groups/:group/epics/:iid/issues/:issue                                issue.relate
DELETE         /groups/:group/epics/:iid/issues/:issue                                unknown:unlink
POST           /groups/:group/epics/:iid/links                                        issue.relate
POST,PUT       /groups/:group/epics/:iid/links/:child                                 issue.relate
DELETE         /groups/:group/epics/:iid/links/:child                                 unknown:unlink
POST           /groups/:group/epics/:iid/related_epics                                issue.relate
DELETE         /groups/:group/epics/:iid/related_epics/:link                          unknown:unlink
POST           /groups/:group/epics/:iid/todos                                        unknown:notify
POST           /groups/:group/epics/:iid/notes                                        issue.comment
PUT            /groups/:group/epics/:iid/notes/:note                                  issue.comment
DELETE         /groups/:group/epics/:iid/notes/:note                                  unknown:delete
POST           /groups/:group/epics/:iid/discussions                                  issue.comment
POST           /groups/:group/epics/:iid/discussions/:discussion/notes                issue.comment
PUT            /groups/:group/epics/:iid/discussions/:discussion/notes/:note          issue.comment
DELETE         /groups/:group/epics/:iid/discussions/:discussion/notes/:note          unknown:delete
POST           /groups/:group/epics/:iid/award_emoji                                  issue.comment
DELETE         /groups/:group/epics/:iid/award_emoji/:award                           issue.comment
POST           /groups/:group/issues/:iid/subscribe                                   unknown:notify
POST           /groups/:group/issues/:iid/unsubscribe                                 unknown:notify
POST,DELETE    /epics/*                                                               unknown:gitbeaker

# --- labels and milestones ----------------------------------------------------------------
POST           /projects/:project/labels                                              label.manage
PUT,DELETE     /projects/:project/labels/:label                                       label.manage
PUT            /projects/:project/labels/:label/promote                               label.manage
POST           /projects/:project/labels/:label/subscribe                             unknown:notify
POST           /projects/:project/labels/:label/unsubscribe                           unknown:notify
POST           /groups/:group/labels                                                  label.manage
PUT,DELETE     /groups/:group/labels/:label                                           label.manage
PUT            /groups/:group/labels/:label/promote                                   label.manage
POST           /groups/:group/labels/:label/subscribe                                 unknown:notify
POST           /groups/:group/labels/:label/unsubscribe                               unknown:notify
POST           /projects/:project/milestones                                          issue.relate
PUT            /projects/:project/milestones/:milestone                               issue.relate
DELETE         /projects/:project/milestones/:milestone                               unknown:delete
POST           /projects/:project/milestones/:milestone/promote                       repo.admin
POST           /groups/:group/milestones                                              issue.relate
PUT            /groups/:group/milestones/:milestone                                   issue.relate
DELETE         /groups/:group/milestones/:milestone                                   unknown:delete

# --- refs, commits and files ------------------------------------------------------------
POST           /projects/:project/repository/branches                                 ref.write
DELETE         /projects/:project/repository/branches/:branch                         ref.write+ref.delete
PUT            /projects/:project/repository/branches/:branch/protect                 branch.protect
PUT            /projects/:project/repository/branches/:branch/unprotect               branch.protect
DELETE         /projects/:project/repository/merged_branches                          ref.write+ref.delete
POST           /projects/:project/repository/tags                                     ref.write
DELETE         /projects/:project/repository/tags/:tag                                ref.write+ref.delete
POST           /projects/:project/repository/commits                                  ref.write
POST           /projects/:project/repository/commits/:sha/cherry_pick                 ref.write
POST           /projects/:project/repository/commits/:sha/revert                      ref.write
POST           /projects/:project/repository/commits/:sha/comments                    issue.comment
POST           /projects/:project/repository/commits/:sha/discussions                 issue.comment
POST           /projects/:project/repository/commits/:sha/discussions/:discussion/notes  issue.comment
PUT            /projects/:project/repository/commits/:sha/discussions/:discussion/notes/:note  issue.comment
DELETE         /projects/:project/repository/commits/:sha/discussions/:discussion/notes/:note  unknown:delete
POST,PUT,DELETE /projects/:project/repository/files/:file                             contents.write
PUT            /projects/:project/repository/submodules/:submodule                    contents.write
POST           /projects/:project/repository/changelog                                contents.write
POST           /projects/:project/statuses/:sha                                       unknown:status
POST           /projects/:project/protected_branches                                  branch.protect
PATCH,DELETE   /projects/:project/protected_branches/:branch                          branch.protect
POST           /projects/:project/protected_tags                                      branch.protect
DELETE         /projects/:project/protected_tags/:tag                                 branch.protect
POST           /projects/:project/mirror/pull                                         repo.admin

# --- wikis --------------------------------------------------------------------------------
POST           /projects/:project/wikis                                               contents.write
PUT,DELETE     /projects/:project/wikis/:slug                                         contents.write
POST           /projects/:project/wikis/attachments                                   contents.write
POST           /groups/:group/wikis                                                   contents.write
PUT,DELETE     /groups/:group/wikis/:slug                                             contents.write
POST           /groups/:group/wikis/attachments                                       contents.write

# --- releases and snippets --------------------------------------------------------------
POST           /projects/:project/releases                                            release.write
PUT,DELETE     /projects/:project/releases/:tag                                       release.write
POST           /projects/:project/releases/:tag/evidence                              release.write
POST           /projects/:project/releases/:tag/assets/links                          release.write
PUT,DELETE     /projects/:project/releases/:tag/assets/links/:link                    release.write
POST           /projects/:project/snippets                                            gist.write
PUT,DELETE     /projects/:project/snippets/:snippet                                   gist.write
POST           /projects/:project/snippets/:snippet/notes                             gist.write
PUT,DELETE     /projects/:project/snippets/:snippet/notes/:note                       gist.write
POST           /projects/:project/snippets/:snippet/discussions                       gist.write
POST           /projects/:project/snippets/:snippet/discussions/:discussion/notes     gist.write
PUT,DELETE     /projects/:project/snippets/:snippet/discussions/:discussion/notes/:note  gist.write
POST           /projects/:project/snippets/:snippet/award_emoji                       gist.write
DELETE         /projects/:project/snippets/:snippet/award_emoji/:award                gist.write
POST           /snippets                                                              gist.write
PUT,DELETE     /snippets/:snippet                                                     gist.write
POST           /snippets/:snippet/repository_storage_moves                            unknown:admin

# --- CI: pipelines, jobs, environments, variables ---------------------------------------
POST           /projects/:project/pipeline                                            workflow.dispatch
POST           /projects/:project/trigger/pipeline                                    workflow.dispatch
DELETE         /projects/:project/pipelines/:pipeline                                 workflow.dispatch
POST           /projects/:project/pipelines/:pipeline/cancel                          workflow.dispatch
POST           /projects/:project/pipelines/:pipeline/retry                           workflow.dispatch
PUT            /projects/:project/pipelines/:pipeline/metadata                        workflow.dispatch
POST           /projects/:project/jobs/:job/play                                      workflow.dispatch
POST           /projects/:project/jobs/:job/retry                                     workflow.dispatch
POST           /projects/:project/jobs/:job/cancel                                    workflow.dispatch
POST           /projects/:project/jobs/:job/erase                                     workflow.dispatch
POST           /projects/:project/jobs/:job/artifacts/keep                            workflow.dispatch
DELETE         /projects/:project/jobs/:job/artifacts                                 workflow.dispatch
DELETE         /projects/:project/artifacts                                           workflow.dispatch
POST           /projects/:project/pipeline_schedules                                  workflow.dispatch
PUT,DELETE     /projects/:project/pipeline_schedules/:schedule                        workflow.dispatch
POST           /projects/:project/pipeline_schedules/:schedule/play                   workflow.dispatch
POST           /projects/:project/pipeline_schedules/:schedule/take_ownership         workflow.dispatch
POST           /projects/:project/pipeline_schedules/:schedule/variables              secret.write
PUT,DELETE     /projects/:project/pipeline_schedules/:schedule/variables/:key         secret.write
POST           /projects/:project/triggers                                            secret.write
PUT,DELETE     /projects/:project/triggers/:trigger                                   secret.write
POST           /projects/:project/environments                                        workflow.dispatch
PUT,DELETE     /projects/:project/environments/:environment                           workflow.dispatch
POST           /projects/:project/environments/:environment/stop                      workflow.dispatch
POST           /projects/:project/environments/stop_stale                             workflow.dispatch
DELETE         /projects/:project/environments/review_apps                            workflow.dispatch
POST           /projects/:project/deployments                                         workflow.dispatch
PUT,DELETE     /projects/:project/deployments/:deployment                             workflow.dispatch
POST           /projects/:project/deployments/:deployment/approval                    workflow.dispatch
PUT            /projects/:project/resource_groups/:key                                workflow.dispatch
POST           /projects/:project/variables                                           secret.write
PUT,DELETE     /projects/:project/variables/:key                                      secret.write
POST           /groups/:group/variables                                               secret.write
PUT,DELETE     /groups/:group/variables/:key                                          secret.write
POST           /projects/:project/secure_files                                        secret.write
DELETE         /projects/:project/secure_files/:file                                  secret.write
POST           /projects/:project/access_tokens                                       secret.write
DELETE         /projects/:project/access_tokens/:token                                secret.write
POST           /projects/:project/access_tokens/:token/rotate                         secret.write
POST           /groups/:group/access_tokens                                           secret.write
DELETE         /groups/:group/access_tokens/:token                                    secret.write
POST           /groups/:group/access_tokens/:token/rotate                             secret.write
POST           /projects/:project/ci/lint                                             read
POST           /ci/lint                                                               read
POST           /markdown                                                              read

# --- project administration -------------------------------------------------------------
POST           /projects                                                              repo.create
POST           /projects/user/:user                                                   repo.create
POST           /projects/import                                                       repo.create
POST           /projects/remote-import                                                repo.create
POST           /projects/remote-import-s3                                             repo.create
POST           /import/github                                                         repo.create
POST           /import/bitbucket                                                      repo.create
POST           /import/bitbucket_server                                               repo.create
POST           /import/github/gists                                                   gist.write
POST           /import/github/cancel                                                  repo.create
POST           /groups/:group/projects/:project                                       repo.admin
DELETE         /projects/:project                                                     repo.delete
POST           /projects/:project/archive                                             repo.delete
POST           /projects/:project/fork                                                repo.fork
POST           /projects/:project/fork/:from                                          repo.admin
DELETE         /projects/:project/fork                                                repo.admin
PUT            /projects/:project                                                     repo.admin
POST           /projects/:project/unarchive                                           repo.admin
POST           /projects/:project/restore                                             repo.admin
PUT            /projects/:project/transfer                                            repo.admin
POST           /projects/:project/housekeeping                                        repo.admin
POST           /projects/:project/export                                              repo.admin
POST           /projects/:project/export_relations                                    repo.admin
POST           /projects/:project/share                                               repo.admin
DELETE         /projects/:project/share/:group_id                                     repo.admin
POST           /projects/:project/members                                             repo.admin
PUT,DELETE     /projects/:project/members/:user                                       repo.admin
POST           /projects/:project/import_project_members/:source                      repo.admin
POST           /projects/:project/invitations                                         repo.admin
PUT,DELETE     /projects/:project/invitations/:email                                  repo.admin
POST           /projects/:project/access_requests                                     repo.admin
DELETE         /projects/:project/access_requests/:user                               repo.admin
PUT            /projects/:project/access_requests/:user/approve                       repo.admin
POST           /projects/:project/hooks                                               repo.admin
PUT,DELETE     /projects/:project/hooks/:hook                                         repo.admin
POST           /projects/:project/hooks/:hook/test/:trigger                           repo.admin
PUT,DELETE     /projects/:project/integrations/:integration                           repo.admin
POST           /projects/:project/badges                                              repo.admin
PUT,DELETE     /projects/:project/badges/:badge                                       repo.admin
POST           /projects/:project/boards                                              repo.admin
PUT,DELETE     /projects/:project/boards/:board                                       repo.admin
POST           /projects/:project/boards/:board/lists                                 repo.admin
PUT,DELETE     /projects/:project/boards/:board/lists/:list                           repo.admin
PUT,DELETE     /projects/:project/custom_attributes/:key                              repo.admin
POST           /projects/:project/deploy_keys                                         repo.admin
PUT,DELETE     /projects/:project/deploy_keys/:key                                    repo.admin
POST           /projects/:project/deploy_keys/:key/enable                             repo.admin
POST           /projects/:project/deploy_tokens                                       repo.admin
DELETE         /projects/:project/deploy_tokens/:token                                repo.admin
POST           /projects/:project/approval_rules                                      repo.admin
PUT,DELETE     /projects/:project/approval_rules/:rule                                repo.admin
POST           /projects/:project/approvals                                           repo.admin
POST,PUT,DELETE /projects/:project/push_rule                                          repo.admin
POST           /projects/:project/protected_environments                              repo.admin
PUT,DELETE     /projects/:project/protected_environments/:name                        repo.admin
POST           /projects/:project/remote_mirrors                                      repo.admin
POST,PUT,DELETE /projects/:project/remote_mirrors/:mirror                             repo.admin
POST           /projects/:project/remote_mirrors/:mirror/sync                         repo.admin
POST           /projects/:project/runners                                             repo.admin
DELETE         /projects/:project/runners/:runner                                     repo.admin
POST,PUT,PATCH,DELETE /projects/:project/job_token_scope/*                            repo.admin
DELETE         /projects/:project/pages                                               repo.admin
POST           /projects/:project/pages/domains                                       repo.admin
PUT,DELETE     /projects/:project/pages/domains/:domain                               repo.admin
POST           /projects/:project/freeze_periods                                      repo.admin
PUT,DELETE     /projects/:project/freeze_periods/:period                              repo.admin
POST           /projects/:project/external_status_checks                              repo.admin
PUT,DELETE     /projects/:project/external_status_checks/:check                       repo.admin
POST,PUT,PATCH,DELETE /projects/:project/feature_flags/*                              repo.admin
POST,PUT,PATCH,DELETE /projects/:project/feature_flags_user_lists/*                   repo.admin
POST,PUT,PATCH,DELETE /projects/:project/error_tracking/*                             repo.admin
POST,PUT,PATCH,DELETE /projects/:project/cluster_agents/*                             repo.admin
PUT            /projects/:project/notification_settings                               unknown:notify
POST           /projects/:project/star                                                unknown:notify
POST           /projects/:project/unstar                                              unknown:notify
POST           /projects/:project/repository_storage_moves                            unknown:admin
POST,PUT,PATCH,DELETE /projects/:project/packages/*                                   unknown:packages
POST,PUT,PATCH,DELETE /projects/:project/registry/*                                   unknown:packages
POST,PUT,PATCH,DELETE /projects/:project/terraform/*                                  unknown:ops
POST,PUT,PATCH,DELETE /projects/:project/alert_management_alerts/*                    unknown:ops
POST,PUT,PATCH,DELETE /projects/:project/vulnerabilities/*                            unknown:ops
POST,PUT,PATCH,DELETE /projects/:project/product_analytics/*                          unknown:ops
POST,PUT,PATCH,DELETE /projects/:project/metrics/*                                    unknown:ops

# --- group administration ---------------------------------------------------------------
POST           /groups                                                                unknown:group
POST           /groups/import                                                         unknown:group
DELETE         /groups/:group                                                         unknown:group
POST           /groups/:group/restore                                                 unknown:group
POST           /groups/:group/transfer                                                unknown:group
PUT            /groups/:group                                                         repo.admin
POST           /groups/:group/export                                                  repo.admin
POST           /groups/:group/export_relations                                        repo.admin
POST           /groups/:group/share                                                   repo.admin
DELETE         /groups/:group/share/:group_id                                         repo.admin
POST           /groups/:group/members                                                 repo.admin
PUT,DELETE     /groups/:group/members/:user                                           repo.admin
PUT            /groups/:group/members/:user/approve                                   repo.admin
POST,DELETE    /groups/:group/members/:user/override                                  repo.admin
PUT            /groups/:group/members/approve_all                                     repo.admin
DELETE         /groups/:group/billable_members/:user                                  repo.admin
POST           /groups/:group/invitations                                             repo.admin
PUT,DELETE     /groups/:group/invitations/:email                                      repo.admin
POST           /groups/:group/access_requests                                         repo.admin
DELETE         /groups/:group/access_requests/:user                                   repo.admin
PUT            /groups/:group/access_requests/:user/approve                           repo.admin
POST           /groups/:group/hooks                                                   repo.admin
PUT,DELETE     /groups/:group/hooks/:hook                                             repo.admin
POST           /groups/:group/badges                                                  repo.admin
PUT,DELETE     /groups/:group/badges/:badge                                           repo.admin
POST           /groups/:group/boards                                                  repo.admin
PUT,DELETE     /groups/:group/boards/:board                                           repo.admin
POST           /groups/:group/boards/:board/lists                                     repo.admin
PUT,DELETE     /groups/:group/boards/:board/lists/:list                               repo.admin
PUT,DELETE     /groups/:group/custom_attributes/:key                                  repo.admin
POST           /groups/:group/deploy_tokens                                           repo.admin
DELETE         /groups/:group/deploy_tokens/:token                                    repo.admin
POST,PUT,DELETE /groups/:group/push_rule                                              repo.admin
POST           /groups/:group/protected_environments                                  repo.admin
PUT,DELETE     /groups/:group/protected_environments/:name                            repo.admin
DELETE         /groups/:group/uploads/:secret/:filename                               repo.admin
POST,PUT,PATCH,DELETE /groups/:group/ldap_group_links/*                               repo.admin
POST           /groups/:group/ldap_sync                                               repo.admin
POST,PUT,PATCH,DELETE /groups/:group/saml_group_links/*                               repo.admin
POST,PUT,PATCH,DELETE /groups/:group/saml/*                                           unknown:user
POST,PUT,PATCH,DELETE /groups/:group/scim/*                                           unknown:user
POST,PUT,PATCH,DELETE /groups/:group/member_roles/*                                   repo.admin
POST,PUT,PATCH,DELETE /groups/:group/service_accounts/*                               unknown:user
PUT            /groups/:group/notification_settings                                   unknown:notify
POST,PUT,PATCH,DELETE /groups/:group/dependency_proxy/*                               unknown:packages
POST,PUT,PATCH,DELETE /groups/:group/-/packages/*                                     unknown:packages
POST           /groups/:group/repository_storage_moves                                unknown:admin

# --- the token's user, other users, the instance ----------------------------------------
POST,PUT,PATCH,DELETE /user/*                                                         unknown:user
POST,PUT,PATCH,DELETE /users/*                                                        unknown:user
POST,PUT,PATCH,DELETE /personal_access_tokens/*                                       unknown:user
POST,PUT,PATCH,DELETE /service_accounts/*                                             unknown:user
POST,PUT,PATCH,DELETE /notification_settings                                          unknown:notify
POST,PUT,PATCH,DELETE /todos/*                                                        unknown:notify
POST,PUT,PATCH,DELETE /runners/*                                                      unknown:runner
POST,PUT,PATCH,DELETE /admin/*                                                        unknown:admin
POST,PUT,PATCH,DELETE /application/*                                                  unknown:admin
POST,PUT,PATCH,DELETE /applications/*                                                 unknown:admin
POST,PUT,PATCH,DELETE /broadcast_messages/*                                           unknown:admin
POST,PUT,PATCH,DELETE /bulk_imports/*                                                 unknown:admin
POST,PUT,PATCH,DELETE /geo_nodes/*                                                    unknown:admin
POST,PUT,PATCH,DELETE /geo_sites/*                                                    unknown:admin
POST,PUT,PATCH,DELETE /hooks/*                                                        unknown:admin
POST,PUT,PATCH,DELETE /license/*                                                      unknown:admin
POST,PUT,PATCH,DELETE /project_aliases/*                                              unknown:admin
POST,PUT,PATCH,DELETE /topics/*                                                       unknown:admin
POST,PUT,PATCH,DELETE /project_repository_storage_moves/*                             unknown:admin
POST,PUT,PATCH,DELETE /group_repository_storage_moves/*                               unknown:admin
POST,PUT,PATCH,DELETE /snippet_repository_storage_moves/*                             unknown:admin
POST,PUT,PATCH,DELETE /clusters/*                                                     unknown:ops
POST,PUT,PATCH,DELETE /environments/*                                                 unknown:ops
POST,PUT,PATCH,DELETE /packages/*                                                     unknown:packages
POST           /code_suggestions/completions                                          inference.call
POST           /code_suggestions/tokens                                               unknown:user
"""

RESOLVERS = frozenset({"@mr_update", "@issue_update", "@mr_discussion"})


@dataclass(frozen=True, slots=True)
class Route:
    """What a route maps to: fixed operations, a resolver that reads the body, or a refusal."""

    operations: tuple[str, ...] = ()
    resolver: str = ""
    reason: str = ""

    @property
    def is_unknown(self) -> bool:
        return self.operations == (UNKNOWN,)


def _parse_target(text: str, where: str) -> Route:
    if text.startswith("@"):
        if text not in RESOLVERS:
            raise ValueError(f"{where}: no resolver {text}")
        return Route(resolver=text)
    if text.startswith("unknown:"):
        key = text.split(":", 1)[1]
        if key not in REASONS:
            raise ValueError(f"{where}: no reason {key!r}")
        return Route((UNKNOWN,), reason=REASONS[key])
    operations = tuple(text.split("+"))
    for op in operations:
        if op not in OPERATIONS or op == UNKNOWN:
            raise ValueError(f"{where}: {op!r} is not an operation of the vocabulary")
    return Route(operations)


def build(table: str = TABLE) -> RouteTrie[Route]:
    """Parse the table into a trie; a malformed row raises naming the row.

    One name per parameter position: Grape names a segment once (``:id`` is not ``:project``
    one row later), so a second name there is a typo in the table.
    """
    trie: RouteTrie[Route] = RouteTrie(uniform_names=True)
    for number, line in enumerate(table.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            methods, template, target = line.split()
        except ValueError:
            raise ValueError(f"routes line {number}: expected 'METHODS TEMPLATE TARGET': {line!r}") from None
        route = _parse_target(target, f"routes line {number}")
        for method in methods.split(","):
            if method not in WRITE_METHODS:
                raise ValueError(f"routes line {number}: {method} is not a write method")
            trie.add(method, template, route)
    return trie


ROUTES: RouteTrie[Route] = build()
