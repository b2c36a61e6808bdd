"""The ``github`` adapter: api.github.com, github.com, uploads.github.com and GHES hosts."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence

from gitvow.adapter import Adapter
from gitvow.errors import PluginError
from gitvow.graphql import BODY_LIMIT, CACHE_SIZE, FIELD_LIMIT, TOKEN_LIMIT, GraphQLReader
from gitvow.hookspecs import hookimpl
from gitvow.request import Classification, Fixture, Request, ToolCall
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_github.commands import classify_gh
from gitvow_github.graphql import DocumentCache
from gitvow_github.hosts import DEFAULT_HOSTS, LOGIN_PATHS, Surface, route
from gitvow_github.inventory import READ_METHODS
from gitvow_github.mcp import classify_mcp
from gitvow_github.rest import classify_rest
from gitvow_gitsmart import classify_git, is_git_path

#: ``[adapters.github]`` options → (GraphQLReader argument, default).
OPTIONS: Mapping[str, tuple[str, int]] = {
    "graphql_body_limit": ("body_limit", BODY_LIMIT),
    "graphql_token_limit": ("token_limit", TOKEN_LIMIT),
    "graphql_field_limit": ("field_limit", FIELD_LIMIT),
    "graphql_cache_size": ("cache_size", CACHE_SIZE),
}

#: Forge tools an agent must not use instead of each relay (shown after "do not use").
RELAY_HINTS: Mapping[str, tuple[str, ...]] = {
    "hive-open-pr": (
        "`gh pr create`",
        "`gh api -X POST repos/{owner}/{repo}/pulls`",
        "the GitHub MCP server's `create_pull_request`",
    ),
    "hive-merge": (
        "`gh pr merge`",
        "`gh api -X PUT repos/{owner}/{repo}/pulls/N/merge`",
        "the GitHub MCP server's `merge_pull_request`",
    ),
}


class GitHubAdapter(Adapter):
    """GitHub REST (every route of the OpenAPI inventory), GraphQL, git smart-HTTP and sign-in."""

    name = "github"
    commands = ("gh",)
    default_hosts = DEFAULT_HOSTS

    def __init__(self) -> None:
        self.reader = GraphQLReader()
        self.documents = DocumentCache(self.reader)

    def configure(self, options: Mapping[str, object]) -> None:
        """``graphql_body_limit`` (bytes), ``graphql_token_limit``, ``graphql_field_limit``,
        ``graphql_cache_size``: positive integers for the GraphQL reader."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise PluginError(self.name, f"unknown option(s) {', '.join(unknown)}; expected {', '.join(OPTIONS)}")
        kwargs: dict[str, int] = {}
        for key, (argument, default) in OPTIONS.items():
            value = options.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise PluginError(self.name, f"{key} must be a positive integer, got {value!r}")
            kwargs[argument] = value
        self.reader = GraphQLReader(**kwargs)
        self.documents = DocumentCache(self.reader)

    def classify(self, request: Request) -> Classification:
        target = route(request.host, request.path)
        if target.surface is Surface.REST:
            return classify_rest(request.method, target.path)
        if target.surface is Surface.GRAPHQL:
            return self.documents.classify(
                request.method.upper(), request.body, content_encoding=request.header("content-encoding")
            )
        return self._web(request)

    def _web(self, request: Request) -> Classification:
        """github.com (or a GHES root): git smart-HTTP, the device flow, and page reads."""
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
        if route(request.host, request.path).surface is Surface.WEB and is_git_path(request.path):
            userpass = token if ":" in token else f"x-access-token:{token}"
            return {"authorization": "Basic " + base64.b64encode(userpass.encode()).decode()}
        return {"authorization": f"Bearer {token}"}

    def relay_hints(self, command: str) -> Sequence[str]:
        return RELAY_HINTS.get(command, ())

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


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GitHubAdapter())
