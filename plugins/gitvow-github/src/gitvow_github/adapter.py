"""The ``github`` adapter: api.github.com, github.com, uploads.github.com and GHES hosts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.graphql import GraphQLReader
from gitvow.request import Classification, Fixture, Request, Resolution, Target, ToolCall
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_github.commands import classify_gh
from gitvow_github.hosts import API_HOST, DEFAULT_HOSTS, GHES_REST_PREFIX, LOGIN_PATHS, Surface, route
from gitvow_github.mcp import classify_mcp

if TYPE_CHECKING:
    from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, Subject
    from gitvow.targets import Fetch
    from gitvow_github.graphql import DocumentCache
    from gitvow_github.options import GitHubOptions

#: Routes below this act on an issue or, with the same number, a pull request.
ISSUE_ROUTE = "/repos/{owner}/{repo}/issues/{issue_number}"

#: Forge tools an agent must not use for each relayed operation (shown after "do not use").
RELAY_HINTS: Mapping[str, tuple[str, ...]] = {
    "pr.create": (
        "`gh pr create`",
        "`gh api -X POST repos/{owner}/{repo}/pulls`",
        "the GitHub MCP server's `create_pull_request`",
    ),
    "pr.merge": (
        "`gh pr merge`",
        "`gh api -X PUT repos/{owner}/{repo}/pulls/N/merge`",
        "the GitHub MCP server's `merge_pull_request`",
    ),
}


def _with_rest_change(result: Classification, request: Request, below: str) -> Classification:
    """A REST write that changes refs or content, with its :class:`~gitvow.change.Change` (and
    ``ref.force``/``ref.delete`` when it forces or deletes a ref): see :mod:`gitvow_github.changes`."""
    operation_id = result.details.get("operation_id")
    if not isinstance(operation_id, str) or result.is_unknown or request.method.upper() in ("GET", "HEAD", "OPTIONS"):
        return result
    from gitvow_github.changes import rest_change

    change = rest_change(operation_id, below, request.body, request.path[: len(request.path) - len(below)],
                         request.query)
    if change is None:
        return result
    from gitvow.change import with_operations

    return replace(result, operations=with_operations(result.operations, change), change=change)


class GitHubAdapter(Adapter):
    """GitHub REST (every route of the OpenAPI inventory), GraphQL, git smart-HTTP and sign-in."""

    name = "github"
    commands = ("gh",)
    default_hosts = DEFAULT_HOSTS
    example_hosts = ("ghe.example.test",)  # a GitHub Enterprise Server the fixtures use

    def __init__(self) -> None:
        self.reader = GraphQLReader()
        self._documents: DocumentCache | None = None

    @property
    def documents(self) -> DocumentCache:
        """The GraphQL document cache, made on first use: the agent gate loads this module for
        every `gh` command and, outside `gh api graphql`, never reads a document."""
        if self._documents is None:
            from gitvow_github.graphql import DocumentCache

            self._documents = DocumentCache(self.reader)
        return self._documents

    @classmethod
    def options_model(cls) -> type[GitHubOptions]:
        from gitvow_github.options import GitHubOptions

        return GitHubOptions

    def configure(self, options: GitHubOptions) -> None:
        self.reader = options.reader(cache_size=options.graphql_cache_size)
        self._documents = None

    def classify(self, request: Request) -> Classification:
        """What ``request`` does, read afresh every time (nothing is remembered between requests)."""
        # The wire classifiers are imported here, not with the module: the agent gate loads
        # this module for a `gh` command and classifies its command line only.
        from gitvow_github.rest import classify_rest

        target = route(request.host, request.path)
        if target.surface is Surface.REST:
            result = classify_rest(request.method, target.path)
            if result.operations == ("issue.edit",) and ISSUE_ROUTE in str(result.details.get("route", "")):
                # The issues API edits, closes, locks and assigns pull requests too: the forge
                # says which one number N is (one lookup per number, whatever the sub-route).
                from gitvow_github.targets import issue_target

                root = request.path[: len(request.path) - len(target.path)]
                return replace(result, targets=(issue_target(root + "/".join(target.path.split("/")[:6])),))
            if result.details.get("operation_id") == "issues/create":
                # POST /repos/{owner}/{repo}/issues: GitHub reads title and body at the top level.
                from gitvow.issues import draft_from_json

                draft = draft_from_json(request)
                return replace(result, issues=(draft,)) if draft is not None else result
            return _with_rest_change(result, request, target.path)
        if target.surface is Surface.GRAPHQL:
            result = self.documents.classify(
                request.method.upper(), request.body, content_encoding=request.header("content-encoding")
            )
            if result.change is not None:
                # The repository is described by the REST API of this host (a classification is
                # cached by body, whatever host it came to).
                root = "" if request.host.lower() == API_HOST else GHES_REST_PREFIX
                change = replace(result.change, default_branch_at=root + result.change.default_branch_at)
                result = replace(result, change=change)
            if result.targets:
                # Node ids are resolved at this host's GraphQL endpoint (the path just used).
                return replace(result, targets=tuple(replace(t, at=request.path) for t in result.targets))
            return result
        return self._web(request)

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        """Node ids through one ``nodes(ids:)`` query; an issue number through ``GET`` of its path."""
        from gitvow_github.targets import resolve as resolve_targets

        return resolve_targets(targets, fetch)

    def _web(self, request: Request) -> Classification:
        """github.com (or a GHES root): git smart-HTTP, the device flow, and page reads."""
        from gitvow_github.inventory import READ_METHODS
        from gitvow_gitsmart import classify_git

        git = classify_git(request)
        if git is not None:
            return git
        method = request.method.upper()
        if method == "POST" and request.path.rstrip("/") in LOGIN_PATHS:
            return Classification(("auth.login",), adapter=self.name)
        if method in READ_METHODS:
            return Classification((READ,), adapter=self.name)
        return Classification(
            (UNKNOWN,), adapter=self.name, note="on the web host only git, sign-in and reads are classified"
        )

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """REST and GraphQL: ``Bearer``. git over HTTPS: Basic ``x-access-token:<token>``.

        Always an ``authorization`` header, so whatever the agent sent is replaced.
        """
        from gitvow_gitsmart.classify import is_git_path  # the module: no package __getattr__ per call

        # The cheap test first: most requests are not git's, and then where they go is moot.
        if is_git_path(request.path) and route(request.host, request.path).surface is Surface.WEB:
            from gitvow.auth import basic_authorization

            return basic_authorization(token, user="x-access-token")
        return {"authorization": f"Bearer {token}"}

    def relay_hints(self, operation: str) -> Sequence[str]:
        return RELAY_HINTS.get(operation, ())

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """GraphQL: an ``errors`` entry; REST: GitHub's ``{"message", "documentation_url"}``,
        which ``gh``, PyGithub and octokit print; git: ``remote:`` lines."""
        from gitvow_gitsmart import is_git_path

        surface = route(request.host, request.path).surface
        if surface is Surface.GRAPHQL:
            return refusal.graphql_errors(message, code, type="FORBIDDEN")
        if surface is Surface.WEB and is_git_path(request.path):
            return refusal.plain(message)
        return refusal.json_message(message, code, documentation_url="https://docs.github.com/rest")

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """git's own refusal on git's paths (:func:`gitvow_gitsmart.git_refusal`): a refused push
        is a report git prints as ``remote:`` lines and ``[remote rejected]``. A GraphQL
        refusal is ``200`` with ``errors``, as GitHub answers a forbidden mutation: ``gh pr
        merge`` prints ``GraphQL: <line>`` (on a 403 it prints the body as escaped JSON). A
        throttle (429) or an unreachable store (503) keeps its status, which clients retry on."""
        from gitvow_gitsmart import git_refusal, is_git_path

        surface = route(request.host, request.path).surface
        if surface is Surface.WEB and is_git_path(request.path):
            return git_refusal(request, message, code)
        if surface is Surface.GRAPHQL and status == 403:
            return refusal.Answer(*refusal.graphql_errors(message, code, type="FORBIDDEN"), status=200)
        return super().refusal_answer(request, message, code, status)

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_gh(argv, self.reader)

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        return classify_mcp(tool, arguments)

    # The contract kit's data is imported when asked for: the agent gate loads this module on
    # every `gh` command and never needs it.
    def fixtures(self) -> Sequence[Fixture]:
        from gitvow_github.fixtures import FIXTURES

        return FIXTURES

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        from gitvow_github.fixtures import FAIL_CLOSED

        return FAIL_CLOSED

    def unsupported(self) -> Mapping[str, str]:
        from gitvow_github.fixtures import UNSUPPORTED

        return UNSUPPORTED

    # The approval's context (gitvow_github.approval_context): asked by the proxy off its event
    # loop for a staged merge or creation, never on the agent gate's path.
    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        from gitvow_github.approval_context import subject

        return subject(request, tuple(operations))

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        from gitvow_github.approval_context import context

        return context(request, subject, ask)

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        from gitvow_github.approval_context import pin

        return pin(request, head_sha)

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        from gitvow_github.approval_fixtures import APPROVAL_FIXTURES

        return APPROVAL_FIXTURES
