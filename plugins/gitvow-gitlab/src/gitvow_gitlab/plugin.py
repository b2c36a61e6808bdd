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

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import unquote

from gitvow.adapter import Adapter
from gitvow.errors import PluginError
from gitvow.graphql import BODY_LIMIT, FIELD_LIMIT, TOKEN_LIMIT, GraphQLReader
from gitvow.hookspecs import hookimpl
from gitvow.request import Classification, Fixture, Request, ToolCall
from gitvow.vocabulary import READ
from gitvow_gitlab.fixtures import fail_closed_fixtures, fixtures
from gitvow_gitlab.glab import classify_glab
from gitvow_gitlab.graphql_ops import ResultCache, classify_graphql
from gitvow_gitlab.mcp import classify_mcp
from gitvow_gitlab.rest import ADAPTER, READ_METHODS, classify_rest, method_override, unknown
from gitvow_gitsmart import classify_git, is_git_path
from gitvow_gitsmart.pktline import COMMANDS_LIMIT

OAUTH_PATHS = frozenset({"token", "authorize_device", "revoke"})
_OPTIONS = ("graphql_body_limit", "graphql_token_limit", "graphql_field_limit", "relative_url_root", "commands_limit")

#: Operations no GitLab request maps to, with the reason (the contract kit checks this list).
UNSUPPORTED: Mapping[str, str] = {
    "agent.session": "GitLab has no agent-activity API of the Linear kind; nothing on the wire maps to it",
}


class PathRefused(ValueError):
    """A path whose segments a front end would rewrite before routing."""


def split_path(path: str) -> list[str]:
    """``/api/v4/projects/g%2Fp/issues`` → ``["api", "v4", "projects", "g/p", "issues"]``."""
    raw = path.split("/")
    if raw and raw[0] == "":
        raw = raw[1:]
    if raw and raw[-1] == "":
        raw = raw[:-1]
    segments: list[str] = []
    for part in raw:
        if not part:
            raise PathRefused("empty path segment")
        if "%" in part:
            # Encoded slashes are by far the commonest escape (project paths): skip unquote for them.
            plain = part.replace("%2F", "/").replace("%2f", "/")
            segment = plain if "%" not in plain else unquote(part)
        else:
            segment = part
        if segment in (".", ".."):
            raise PathRefused("dot segment in the path")
        segments.append(segment)
    return segments


class GitLabAdapter(Adapter):
    """GitLab REST v4, GraphQL, OAuth sign-in and git smart-HTTP."""

    name = ADAPTER
    commands = ("glab",)
    default_hosts = ("gitlab.com",)

    def __init__(self) -> None:
        self.reader = GraphQLReader()
        self.results = ResultCache()
        self.root: list[str] = []
        self.commands_limit = COMMANDS_LIMIT

    @property
    def relative_url_root(self) -> str:
        return "/" + "/".join(self.root) if self.root else ""

    def configure(self, options: Mapping[str, object]) -> None:
        """``graphql_body_limit``/``graphql_token_limit``/``graphql_field_limit`` (positive
        integers), ``relative_url_root`` (``/gitlab``), ``commands_limit`` (git push commands, bytes)."""
        unknown = set(options) - set(_OPTIONS)
        if unknown:
            raise PluginError(self.name, f"unknown option(s) {', '.join(sorted(unknown))}; expected {', '.join(_OPTIONS)}")
        limits: dict[str, int] = {}
        for key, default in (("graphql_body_limit", BODY_LIMIT), ("graphql_token_limit", TOKEN_LIMIT),
                             ("graphql_field_limit", FIELD_LIMIT), ("commands_limit", COMMANDS_LIMIT)):
            value = options.get(key, default)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise PluginError(self.name, f"{key} must be a positive integer, got {value!r}")
            limits[key] = value
        root = options.get("relative_url_root", "")
        if not isinstance(root, str) or (root and not root.startswith("/")):
            raise PluginError(self.name, f"relative_url_root must be a path starting with '/', got {root!r}")
        try:
            root_segments = split_path(root) if root else []
        except PathRefused as exc:
            raise PluginError(self.name, f"relative_url_root {root!r}: {exc}") from None
        self.reader = GraphQLReader(
            body_limit=limits["graphql_body_limit"],
            token_limit=limits["graphql_token_limit"],
            field_limit=limits["graphql_field_limit"],
        )
        self.results = ResultCache()
        self.commands_limit = limits["commands_limit"]
        self.root = root_segments

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
            return classify_rest(request, segments[2:])
        if head == ["api", "graphql"] and len(segments) == 2:
            return classify_graphql(request, self.reader, self.results)
        if len(segments) == 2 and segments[0] == "oauth" and segments[1] in OAUTH_PATHS and request.method == "POST":
            return Classification(("auth.login",), adapter=ADAPTER, details={"api": "oauth"})
        if segments[:1] == ["api"]:
            return self._outside(request)
        git = classify_git(request, strip_prefix=self.relative_url_root, limit=self.commands_limit)
        if git is not None:
            return git
        return self._outside(request)

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
            userpass = token if ":" in token else f"oauth2:{token}"
            return {"authorization": "Basic " + base64.b64encode(userpass.encode()).decode()}
        return {"authorization": f"Bearer {token}"}

    # -- the agent gate ------------------------------------------------------------------------

    def relay_hints(self, command: str) -> Sequence[str]:
        if command == "hive-open-pr":
            return ("glab mr create", "the GitLab MCP tool create_merge_request", "GraphQL mergeRequestCreate")
        if command == "hive-merge":
            return ("glab mr merge", "the GitLab MCP tool merge_merge_request", "GraphQL mergeRequestAccept")
        return ()

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_glab(argv, self.classify, host=self.default_hosts[0])

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        return classify_mcp(tool, arguments, self._graphql_document)

    def _graphql_document(self, query: str, variables: object) -> tuple[tuple[str, ...], str | None]:
        payload: dict[str, object] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        request = Request(method="POST", host=self.default_hosts[0], path="/api/graphql",
                          body=json.dumps(payload).encode(), headers={"content-type": "application/json"})
        result = classify_graphql(request, self.reader)
        return result.operations, result.repo

    # -- the contract kit ----------------------------------------------------------------------

    def fixtures(self) -> Sequence[Fixture]:
        return fixtures()

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return fail_closed_fixtures(self.reader.body_limit)

    def unsupported(self) -> Mapping[str, str]:
        return dict(UNSUPPORTED)


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GitLabAdapter())


__all__ = ["UNSUPPORTED", "GitLabAdapter", "PathRefused", "split_path"]
