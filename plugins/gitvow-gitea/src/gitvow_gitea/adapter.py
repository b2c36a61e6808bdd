"""The ``gitea`` adapter: Gitea and Forgejo, their REST API under ``/api/v1`` and git over HTTP.

A request is one of three things, told apart by its path:

* ``/api/v1/…`` — the REST API. ``GET``/``HEAD``/``OPTIONS`` are ``read``; every other
  method is looked up in the core route trie (:mod:`gitvow.routing`) built from
  :mod:`gitvow_gitea.routes`. A route the table does not know is ``unknown``, denied.
* a git smart-HTTP path (``/owner/repo.git/info/refs``, ``…/git-receive-pack``) — delegated
  to ``gitvow_gitsmart.classify_git``, like every forge adapter.
* anything else — the web UI: reads are ``read``, form posts are ``unknown`` (an agent uses
  the API, where its writes can be classified).

``codeberg.org`` (Forgejo) is served by default; other instances are mapped in ``[hosts]``.
An instance mounted under a sub-path (``https://example.test/gitea/``) sets ``prefix``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.auth import basic_authorization
from gitvow.change import with_operations
from gitvow.issues import draft_from_json
from gitvow.paths import PathRefused, split_path
from gitvow.request import Classification, Fixture, Request, Resolution, Target, ToolCall
from gitvow.routing import ANY_METHOD, Match, RouteTrie
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_gitea import fixtures
from gitvow_gitea.changes import api_change
from gitvow_gitea.commands import classify_tea
from gitvow_gitea.mcp import classify_gitea_tool
from gitvow_gitea.routes import ISSUE, ROUTES, Route
from gitvow_gitsmart import classify_git, git_refusal, is_git_path

if TYPE_CHECKING:
    from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, Subject
    from gitvow.targets import Fetch
    from gitvow_gitea.options import GiteaOptions

API = "/api/v1"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_REPO_PAIRS = (("owner", "repo"), ("template_owner", "template_repo"), ("org", "repo"))
_SETTINGS_BODY_LIMIT = 64 * 1024


def build_trie(routes: Sequence[Route] = ROUTES) -> RouteTrie[Route]:
    """The write-route trie; a refused route must say why."""
    for route in routes:
        if route.operation == UNKNOWN and not route.why:
            raise ValueError(f"{route.method} {route.template} is refused without a reason")
    return RouteTrie((route.method, route.template, route) for route in routes)


TRIE = build_trie()



def repo_of(match: Match[Route]) -> str | None:
    """``owner/name`` from the first pair of parameters the matched route has."""
    for owner, name in _REPO_PAIRS:
        owner_value = match.param(owner)
        if owner_value is not None:
            name_value = match.param(name)
            if name_value is not None:
                return f"{owner_value}/{name_value}"
    return None


def read_repo(segments: Sequence[str]) -> str | None:
    """The repository a read under ``/repos/{owner}/{repo}`` names (not ``/repos/issues/search``)."""
    if len(segments) >= 3 and segments[0] == "repos" and (segments[1], segments[2]) != ("issues", "search"):
        return f"{segments[1]}/{segments[2]}"
    return None


def _archives(request: Request) -> bool:
    """Whether a repository-settings PATCH archives the repository (``"archived": true``)."""
    if len(request.body) > _SETTINGS_BODY_LIMIT:
        return True  # unread: assume the worst, it is denied either way by default
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(payload, dict) and payload.get("archived") is True


class GiteaAdapter(Adapter):
    """Gitea/Forgejo REST API v1 and git smart-HTTP."""

    name = "gitea"
    commands = ("tea",)
    default_hosts = ("codeberg.org",)
    encoded_slash = True  # branches/feature%2Fx: Gitea routes the raw path, so it stays one segment

    def __init__(self) -> None:
        self.prefix = ""

    @classmethod
    def options_model(cls) -> type[GiteaOptions]:
        from gitvow_gitea.options import GiteaOptions

        return GiteaOptions

    def configure(self, options: GiteaOptions) -> None:
        self.prefix = options.prefix

    def classify(self, request: Request) -> Classification:
        path = request.path
        if self.prefix:
            if path != self.prefix and not path.startswith(self.prefix + "/"):
                return self._web(request, "outside the configured prefix")
            path = path[len(self.prefix) :] or "/"
        if path == API or path.startswith(API + "/"):
            return self._api(request, path[len(API) :])
        if is_git_path(path):
            result = classify_git(request, strip_prefix=self.prefix)
            if result is not None:
                return result
        return self._web(request, "not an API or git path")

    def _web(self, request: Request, where: str) -> Classification:
        if request.method in READ_METHODS:
            return Classification((READ,))
        return Classification.unknown(f"{request.method} {where}: writes go through {API}, where they can be classified")

    def _api(self, request: Request, path: str) -> Classification:
        try:
            segments = split_path(path)
        except PathRefused as exc:
            return Classification.unknown(f"{exc}: a front end would route it elsewhere")
        if request.method in READ_METHODS:
            return Classification((READ,), repo=read_repo(segments))
        if request.method == ANY_METHOD or not request.method.isalpha():
            return Classification.unknown("not an HTTP method")
        match = TRIE.match(request.method, segments)
        if match is None:
            return Classification.unknown(
                f"{request.method} {API}/{'/'.join(segments)[:80]} is not a known Gitea API route", repo=read_repo(segments)
            )
        route = match.value
        repo = repo_of(match)
        if route.operation == UNKNOWN:
            return Classification.unknown(route.why, repo=repo)
        operations: tuple[str, ...] = (route.operation,)
        if route.operation == "repo.admin" and route.template == "/repos/{owner}/{repo}" and _archives(request):
            operations = ("repo.admin", "repo.delete")
        details = {"route": f"{route.method} {route.template}"}
        if route.method == "PATCH" and route.template == ISSUE:
            # Gitea's issues API edits, closes and reopens pull requests too: Gitea says which.
            target = Target("issue", request.path, by_type=(("pull_request", ("pr.edit",)),), at=request.path)
            return Classification(operations, repo=repo, targets=(target,), details=details)
        change = api_change(request, match)
        if change is not None:
            # What the write changes (branch, paths, contents): judged by the change stage.
            return Classification(with_operations(operations, change), repo=repo, details=details, change=change)
        if route.operation == "issue.create":
            # CreateIssueOption: Gitea binds title and body from the JSON object's top level.
            draft = draft_from_json(request)
            return Classification(operations, repo=repo, details=details, issues=(draft,) if draft else ())
        return Classification(operations, repo=repo, details=details)

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        """An issue number through ``GET`` of its path: ``pull_request`` set means a pull request."""
        answers: dict[Target, Resolution] = {}
        for target in targets:
            if target.kind != "issue" or not target.at:
                continue
            status, body = fetch("GET", target.at, b"")
            data = json.loads(body) if status == 200 else None
            repo = data.get("repository") if isinstance(data, dict) else None
            name = repo.get("full_name") if isinstance(repo, dict) else None
            if not isinstance(data, dict) or not isinstance(name, str) or "number" not in data:
                continue
            answers[target] = Resolution(name, "pull_request" if data.get("pull_request") else "issue")
        return answers

    def git_repository_path(self, request: Request, repo: str) -> str | None:
        """``<prefix>/<owner>/<repo>.git``: Gitea and Forgejo serve git on the API's host."""
        return f"{self.prefix}/{repo.strip('/')}.git"

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """``Authorization: token …`` for the API; Basic for git, where Gitea reads a token as
        the user name when the password is ``x-oauth-basic`` (``user:token`` is kept as given)."""
        path = request.path[len(self.prefix) :] if self.prefix and request.path.startswith(self.prefix) else request.path
        if not (path == API or path.startswith(API + "/")) and is_git_path(path):
            return basic_authorization(token, password="x-oauth-basic")
        return {"authorization": f"token {token}"}

    def relay_hints(self, operation: str) -> Sequence[str]:
        if operation == "pr.create":
            return ("tea pr create", f"POST {API}/repos/OWNER/REPO/pulls")
        if operation == "pr.merge":
            return ("tea pr merge", f"POST {API}/repos/OWNER/REPO/pulls/N/merge")
        return ()

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """The API: Gitea's ``{"message", "url"}``, which tea and py-gitea print; git: ``remote:`` lines."""
        path = request.path[len(self.prefix) :] if self.prefix and request.path.startswith(self.prefix) else request.path
        if path == API or path.startswith(API + "/"):
            return refusal.json_message(message, code, url="")
        return refusal.plain(message)

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """git's own refusal on git's paths (:func:`gitvow_gitsmart.git_refusal`): a refused push
        is a report git prints as ``remote:`` lines and ``[remote rejected]``."""
        path = request.path[len(self.prefix) :] if self.prefix and request.path.startswith(self.prefix) else request.path
        if not (path == API or path.startswith(API + "/")) and is_git_path(path):
            return git_refusal(request, message, code)
        return super().refusal_answer(request, message, code, status)

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_tea(argv)

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        return classify_gitea_tool(tool, arguments)

    def fixtures(self) -> Sequence[Fixture]:
        return fixtures.FIXTURES

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return fixtures.FAIL_CLOSED

    def unsupported(self) -> Mapping[str, str]:
        return fixtures.UNSUPPORTED

    # The approval's context (gitvow_gitea.approval_context): asked by the proxy off its event
    # loop for a staged merge or creation, never on the agent gate's path.
    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        from gitvow_gitea.approval_context import subject

        return subject(request, tuple(operations))

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        from gitvow_gitea.approval_context import context

        return context(request, subject, ask)

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        from gitvow_gitea.approval_context import pin

        return pin(request, head_sha)

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        from gitvow_gitea.approval_fixtures import APPROVAL_FIXTURES

        return APPROVAL_FIXTURES
