"""The ``gitlab`` adapter: gitlab.com and self-managed GitLab mapped to it in ``[hosts]``.

A request is read in this order, each step owning a part of the URL space:

1. a verb override (``X-HTTP-Method-Override``, ``_method``) on a write → ``unknown``:
   the verb GitLab would run is not the one on the wire;
2. the path is split on ``/`` and each segment percent-decoded; empty interior segments and
   dot segments → ``unknown`` (a front end would normalise them into another route);
3. ``/api/v4/…`` → the REST route trie (:mod:`gitvow_gitlab.routes`);
4. ``/api/graphql`` → GraphQL (:mod:`gitvow_gitlab.graphql_ops`);
5. ``/oauth/token``, ``/oauth/authorize_device``, ``/oauth/revoke`` → ``auth.login``;
6. git smart-HTTP paths → :func:`gitvow_gitsmart.classify_git`;
7. anything else: reads are ``read``, writes ``unknown``.

A self-managed instance under a relative URL root (``https://host/gitlab/api/v4``) sets
``relative_url_root = "/gitlab"`` in ``[adapters.gitlab]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.auth import basic_authorization
from gitvow.graphql import GraphQLReader
from gitvow.overrides import method_override
from gitvow.paths import PathRefused, split_path
from gitvow.request import Classification, Fixture, Request, Resolution, Target, ToolCall
from gitvow.vocabulary import READ
from gitvow_gitlab.fixtures import fail_closed_fixtures, fixtures
from gitvow_gitlab.glab import classify_glab
from gitvow_gitlab.graphql_ops import ResultCache, classify_graphql
from gitvow_gitlab.mcp import classify_mcp
from gitvow_gitlab.rest import ADAPTER, READ_METHODS, classify_rest, target_project, unknown
from gitvow_gitsmart import classify_git, git_refusal, is_git_path
from gitvow_gitsmart.pktline import COMMANDS_LIMIT

if TYPE_CHECKING:
    from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, Subject
    from gitvow.targets import Fetch
    from gitvow_gitlab.options import GitLabOptions

#: The kind of target a numeric project id is.
PROJECT = "project"
PROJECT_GID = "gid://gitlab/Project/"

OAUTH_PATHS = frozenset({"token", "authorize_device", "revoke"})

#: Operations no GitLab request maps to, with the reason (the contract kit checks this list).
UNSUPPORTED: Mapping[str, str] = {
    "agent.session": "GitLab has no agent-activity API of the Linear kind; nothing on the wire maps to it",
}



class GitLabAdapter(Adapter):
    """GitLab REST v4, GraphQL, OAuth sign-in and git smart-HTTP."""

    name = ADAPTER
    commands = ("glab",)
    default_hosts = ("gitlab.com",)
    encoded_slash = True  # projects/group%2Fproject: GitLab keeps an encoded slash in its segment

    def __init__(self) -> None:
        self.reader = GraphQLReader()
        self.results = ResultCache()
        self.root: list[str] = []
        self.commands_limit = COMMANDS_LIMIT

    @property
    def relative_url_root(self) -> str:
        return "/" + "/".join(self.root) if self.root else ""

    @classmethod
    def options_model(cls) -> type[GitLabOptions]:
        from gitvow_gitlab.options import GitLabOptions

        return GitLabOptions

    def configure(self, options: GitLabOptions) -> None:
        self.reader = options.reader()
        self.results = ResultCache()
        self.commands_limit = options.commands_limit
        self.root = split_path(options.relative_url_root)

    # -- the wire ----------------------------------------------------------------------------

    def classify(self, request: Request) -> Classification:
        if request.method not in READ_METHODS:
            refused = method_override(request)
            if refused:
                return unknown(refused)
        try:
            segments = split_path(request.path)
        except PathRefused as exc:
            return unknown(str(exc))
        if self.root:
            if segments[: len(self.root)] != self.root:
                return self._outside(request)
            segments = segments[len(self.root) :]
        head = segments[:2]
        if head == ["api", "v4"]:
            return self._rest(request, segments[2:])
        if head == ["api", "graphql"] and len(segments) == 2:
            return self._graphql(request)
        if len(segments) == 2 and segments[0] == "oauth" and segments[1] in OAUTH_PATHS and request.method == "POST":
            return Classification(("auth.login",), adapter=ADAPTER, details={"api": "oauth"})
        if segments[:1] == ["api"]:
            return self._outside(request)
        git = classify_git(request, strip_prefix=self.relative_url_root, limit=self.commands_limit)
        if git is not None:
            return git
        return self._outside(request)

    def _rest(self, request: Request, segments: list[str]) -> Classification:
        """REST v4, with a numeric project id (its own, or a merge request's ``target_project_id``)
        as a target GitLab says the path of (``GET /projects/:id``)."""
        result = classify_rest(request, segments)
        projects = [result.details.get("project_id")] if result.repo is None else []
        if request.method not in READ_METHODS:
            projects.append(target_project(request))
        targets = tuple(
            Target(PROJECT, str(p), at=f"{self.relative_url_root}/api/v4/projects/{p}" if isinstance(p, int) else "")
            for p in dict.fromkeys(projects) if p is not None
        )
        return replace(result, targets=targets) if targets else result

    def _graphql(self, request: Request) -> Classification:
        result = classify_graphql(request, self.reader, self.results)
        if any(t.value.startswith(PROJECT_GID) for t in result.targets):
            # A project's global id is its numeric id: resolved like one.
            return replace(result, targets=tuple(self._project_gid(t) for t in result.targets))
        return result

    def git_repository_path(self, request: Request, repo: str) -> str | None:
        """``<relative_url_root>/<group>/<project>.git``: GitLab serves git on the API's host."""
        return f"{self.relative_url_root}/{repo.strip('/')}.git"

    def _project_gid(self, target: Target) -> Target:
        number = target.value[len(PROJECT_GID):]
        if not target.value.startswith(PROJECT_GID) or not (number.isascii() and number.isdigit()):
            return target
        return Target(PROJECT, number, at=f"{self.relative_url_root}/api/v4/projects/{number}")

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        """Numeric project ids through ``GET /api/v4/projects/:id`` (``path_with_namespace``).

        A project's GraphQL global id (``gid://gitlab/Project/42``) is resolved the same way;
        other global ids (``gid://gitlab/Issue/5``) are not: they stay unknown, so a repository
        gate in force refuses such a write (``repo_unresolved``)."""
        answers: dict[Target, Resolution] = {}
        for target in targets:
            if target.kind != PROJECT or not target.at:
                continue
            status, body = fetch("GET", target.at, b"")
            if status != 200:
                continue
            data = json.loads(body)
            path = data.get("path_with_namespace") if isinstance(data, dict) else None
            if isinstance(path, str) and path.strip("/") and str(data.get("id")) == target.value:
                answers[target] = Resolution(path.strip("/"), "project")
        return answers

    @staticmethod
    def _outside(request: Request) -> Classification:
        if request.method in READ_METHODS:
            return Classification((READ,), adapter=ADAPTER)
        return unknown("not a GitLab REST v4, GraphQL, OAuth or git smart-HTTP path")

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """``Bearer`` for the API and GraphQL; Basic ``oauth2:<token>`` for git; none for OAuth sign-in."""
        try:
            segments = split_path(request.path)[len(self.root) :]
        except PathRefused:
            segments = []
        if segments[:1] == ["oauth"]:
            return {}
        if segments[:1] != ["api"] and is_git_path(request.path):
            return basic_authorization(token, user="oauth2")
        return {"authorization": f"Bearer {token}"}

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """GraphQL: an ``errors`` entry; REST: GitLab's ``{"message": …}``, which glab and
        python-gitlab print; git: ``remote:`` lines."""
        try:
            segments = split_path(request.path)[len(self.root) :]
        except PathRefused:
            segments = []
        if segments[:2] == ["api", "graphql"]:
            return refusal.graphql_errors(message, code)
        if segments[:1] == ["api"] or segments[:1] == ["oauth"]:
            return refusal.json_message(message, code)
        return refusal.plain(message)

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """git's own refusal on git's paths (:func:`gitvow_gitsmart.git_refusal`): a refused push
        is a report git prints as ``remote:`` lines and ``[remote rejected]``."""
        try:
            segments = split_path(request.path)[len(self.root) :]
        except PathRefused:
            segments = []
        if segments[:1] not in (["api"], ["oauth"]) and is_git_path(request.path):
            return git_refusal(request, message, code, limit=self.commands_limit)
        return super().refusal_answer(request, message, code, status)

    # -- the agent gate ------------------------------------------------------------------------

    def relay_hints(self, operation: str) -> Sequence[str]:
        if operation == "pr.create":
            return ("glab mr create", "the GitLab MCP tool create_merge_request", "GraphQL mergeRequestCreate")
        if operation == "pr.merge":
            return ("glab mr merge", "the GitLab MCP tool merge_merge_request", "GraphQL mergeRequestAccept")
        return ()

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_glab(argv, self.classify, host=self.default_hosts[0])

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        return classify_mcp(tool, arguments, self._graphql_document)

    def _graphql_document(self, query: str, variables: object) -> Classification:
        payload: dict[str, object] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        request = Request(method="POST", host=self.default_hosts[0], path="/api/graphql",
                          body=json.dumps(payload).encode(), headers={"content-type": "application/json"})
        return classify_graphql(request, self.reader)

    # -- the contract kit ----------------------------------------------------------------------

    def fixtures(self) -> Sequence[Fixture]:
        return fixtures()

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return fail_closed_fixtures(self.reader.body_limit)

    def unsupported(self) -> Mapping[str, str]:
        return dict(UNSUPPORTED)

    # The approval's context (gitvow_gitlab.approval_context): asked by the proxy off its event
    # loop for a staged merge or creation, never on the agent gate's path.
    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        from gitvow_gitlab.approval_context import subject

        return subject(request, tuple(operations))

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        from gitvow_gitlab.approval_context import context

        return context(request, subject, ask)

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        from gitvow_gitlab.approval_context import pin

        return pin(request, head_sha)

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        from gitvow_gitlab.approval_fixtures import APPROVAL_FIXTURES

        return APPROVAL_FIXTURES


__all__ = ["UNSUPPORTED", "GitLabAdapter", "PathRefused", "split_path"]
