"""The ``bitbucket`` adapter: Bitbucket Cloud and Bitbucket Data Center, their REST APIs and git over HTTP.

A request is one of these, told apart by its path (already canonical: the core decoded
unreserved characters and refused what a front end would rewrite before ``classify``):

* ``/2.0/…`` — Bitbucket Cloud's REST API 2.0 (``api.bitbucket.org``; ``bitbucket.org/!api/2.0/…``
  for its web client);
* ``/rest/{api}/{1.0|latest}/…`` — Bitbucket Data Center's REST API, on the hosts the policy
  maps to ``bitbucket`` in ``[hosts]`` (there is no default Data Center host);
* a git smart-HTTP path — Cloud's ``/{workspace}/{repo}.git/…`` on ``bitbucket.org``, Data
  Center's ``/scm/{project}/{repo}.git/…`` — delegated to ``gitvow_gitsmart.classify_git``;
* anything else — the web UI: reads are ``read``, writes ``unknown`` (an agent uses the API).

``GET``/``HEAD``/``OPTIONS`` are ``read`` and name the repository their path is under, so
``[proxy] allowed_repos`` limits reads too. Every write is looked up in the route tables of
:mod:`gitvow_bitbucket.routes`; a route they do not hold is ``unknown``, denied.

Cloud names a workspace or repository by slug or by UUID (``{…}``, sent as ``%7B…%7D``). A
UUID does not say which repository it is, so the request carries a ``Target`` that
:meth:`BitbucketAdapter.resolve` settles by asking the API for the repository's
``full_name``: a repository gate never judges a UUID as if it were a name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.auth import basic_authorization
from gitvow.change import with_operations
from gitvow.issues import draft_from_json
from gitvow.overrides import method_override
from gitvow.paths import PathRefused, split_path
from gitvow.request import Classification, Fixture, Request, Resolution, Target, ToolCall
from gitvow.routing import RouteTable
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_bitbucket import fixtures
from gitvow_bitbucket.changes import api_change
from gitvow_bitbucket.commands import classify_curl
from gitvow_bitbucket.routes import CLOUD, SERVER
from gitvow_gitsmart import classify_git, git_refusal, is_git_path

if TYPE_CHECKING:
    from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, Subject
    from gitvow.targets import Fetch

CLOUD_API = "api.bitbucket.org"
CLOUD_GIT = "bitbucket.org"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Data Center API versions on the wire (branch permissions are 2.0); all are the inventory's ``latest``.
_VERSIONS = frozenset({"1.0", "2.0", "latest"})
#: Cloud's error body (what the Bitbucket clients print); Data Center's is ``errors[].message``.
CLOUD_ERROR = {"type": "error", "error": {"message": refusal.MESSAGE}}
SERVER_ERROR = {"errors": [{"context": None, "message": refusal.MESSAGE, "exceptionName": None}]}


def _is_uuid(segment: str) -> bool:
    return len(segment) > 2 and segment[0] == "{" and segment[-1] == "}"


def cloud_repo(segments: Sequence[str]) -> str | None:
    """``workspace/slug`` of a path under ``/2.0/repositories/{workspace}/{slug}``."""
    if len(segments) >= 4 and segments[1].lower() == "repositories":
        return f"{segments[2]}/{segments[3]}"
    return None


def server_repo(segments: Sequence[str]) -> str | None:
    """``PROJECT/slug`` of a path under ``/rest/{api}/{version}/…/projects/{key}/repos/{slug}``."""
    for i in range(3, len(segments) - 3):  # mirroring's supportInfo puts it one segment deeper
        if segments[i].lower() == "projects" and segments[i + 2].lower() == "repos":
            return f"{segments[i + 1]}/{segments[i + 3]}"
    return None


class BitbucketAdapter(Adapter):
    """Bitbucket Cloud (REST 2.0) and Data Center (REST 1.0), and git smart-HTTP on both."""

    name = "bitbucket"
    default_hosts = (CLOUD_API, CLOUD_GIT)
    example_hosts = ("bitbucket.example.test",)  # a Data Center instance the fixtures use
    #: There is no official Bitbucket CLI (no ``bb``): the gate reads ``curl`` to Bitbucket Cloud.
    commands = ("curl",)

    def classify(self, request: Request) -> Classification:
        try:
            segments = split_path(request.path)
        except PathRefused as exc:  # the pipeline refused it already; a direct caller gets unknown
            return Classification.unknown(f"{exc}: a front end would route it elsewhere")
        # Bitbucket's front ends route some paths case-blind: literals are compared folded.
        head = [segment.lower() for segment in segments[:3]]
        if head[:2] == ["!api", "2.0"]:
            # bitbucket.org's own web client calls the same API under /!api/2.0
            return self._api(request, segments[1:], cloud=True)
        if head[:1] == ["2.0"]:
            return self._api(request, segments, cloud=True)
        if head[:1] == ["rest"] and len(head) == 3 and head[2] in _VERSIONS:
            return self._api(request, segments, cloud=False)
        if is_git_path(request.path):
            result = classify_git(request, strip_prefix="/scm" if segments[:1] == ["scm"] else "")
            if result is not None:
                return result
        if request.method in READ_METHODS:
            return Classification((READ,))
        return Classification.unknown(f"{request.method} is not an API or git path: writes go through the REST API")

    def _api(self, request: Request, segments: list[str], *, cloud: bool) -> Classification:
        repo = cloud_repo(segments) if cloud else server_repo(segments)
        targets = self._targets(segments) if cloud and repo is not None else ()
        if targets:
            repo = None
        if request.method in READ_METHODS:
            return Classification((READ,), repo=repo, targets=targets)
        if not request.method.isalpha() or request.method == "*":
            return Classification.unknown("not an HTTP method", repo=repo)
        refused = method_override(request)
        if refused:
            return Classification.unknown(refused, repo=repo)
        table: RouteTable = CLOUD if cloud else SERVER
        # Data Center's API version is part of the path: 1.0, 2.0 and latest are the same route.
        rest = segments[1:] if cloud else [segments[1], "latest", *segments[3:]]
        match = table.match(request.method, rest)
        if match is None:
            where = "/".join(segments)[:80]
            return Classification.unknown(f"{request.method} /{where} is not a known Bitbucket API route", repo=repo)
        route = match.value
        operations = route.operations_for(request, match)
        if UNKNOWN in operations:
            return Classification.unknown(route.why, repo=repo)
        details = {"route": f"{route.method} {route.template}", "flavour": "cloud" if cloud else "data-center"}
        change = api_change(request, match, cloud=cloud)
        if change is not None:
            # What the write changes (refs, paths, contents, a pull request's base): the change stage judges it.
            return Classification(with_operations(operations, change), repo=repo, targets=targets, details=details,
                                  change=change)
        if "issue.create" in operations:
            draft = draft_from_json(request)
            return Classification(operations, repo=repo, targets=targets, details=details,
                                  issues=(draft,) if draft else ())
        return Classification(operations, repo=repo, targets=targets, details=details)

    @staticmethod
    def _targets(segments: Sequence[str]) -> tuple[Target, ...]:
        workspace, slug = segments[2], segments[3]
        if not (_is_uuid(workspace) or _is_uuid(slug)):
            return ()
        at = f"/2.0/repositories/{quote(workspace, safe='')}/{quote(slug, safe='')}"
        return (Target("repository", f"{workspace}/{slug}", at=at),)

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        """A repository named by UUID: ``GET /2.0/repositories/{workspace}/{repo}`` says its ``full_name``."""
        answers: dict[Target, Resolution] = {}
        for target in targets:
            if target.kind != "repository" or not target.at:
                continue
            status, body = fetch("GET", target.at, b"")
            try:
                data = json.loads(body) if status == 200 else None
            except ValueError:
                continue
            name = data.get("full_name") if isinstance(data, dict) else None
            if isinstance(name, str) and name.count("/") == 1 and all(name.split("/")):
                answers[target] = Resolution(name, "repository")
        return answers

    def git_repository_path(self, request: Request, repo: str) -> str | None:
        """Where git serves ``repo`` on the request's host: Data Center's ``/scm/{project}/{repo}.git``,
        and ``/{workspace}/{repo}.git`` on bitbucket.org (whose web client calls ``/!api/2.0``).
        None on Cloud's API host, which serves no git: its changes name the API's description
        (:data:`gitvow_bitbucket.changes.CLOUD_REPOSITORY_AT`)."""
        repo = repo.strip("/")
        if request.path.startswith("/rest/"):
            return f"/scm/{repo}.git"
        if request.path.startswith("/!api/"):
            return f"/{repo}.git"
        return None

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """Bearer for the REST APIs; Basic for git (Cloud reads an access token with the user
        ``x-token-auth``; a ``user:app-password`` token is kept as given)."""
        if is_git_path(request.path) and not request.path.startswith(("/2.0/", "/rest/")):
            return basic_authorization(token, user="x-token-auth")
        return {"authorization": f"Bearer {token}"}

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """Cloud's ``{"type": "error", "error": {"message"}}``, Data Center's ``errors[].message``, git's text."""
        if request.path.startswith("/2.0/"):
            return refusal.json_shaped(message, code, CLOUD_ERROR)
        if request.path.startswith("/rest/"):
            return refusal.json_shaped(message, code, SERVER_ERROR)
        return refusal.plain(message)

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """git's own refusal on git's paths (:func:`gitvow_gitsmart.git_refusal`): a refused push
        is a report git prints as ``remote:`` lines and ``[remote rejected]``."""
        if is_git_path(request.path) and not request.path.startswith(("/2.0/", "/rest/")):
            return git_refusal(request, message, code)
        return super().refusal_answer(request, message, code, status)

    def relay_hints(self, operation: str) -> Sequence[str]:
        if operation == "pr.create":
            return ("POST /2.0/repositories/WORKSPACE/REPO/pullrequests",)
        if operation == "pr.merge":
            return ("POST /2.0/repositories/WORKSPACE/REPO/pullrequests/N/merge",)
        return ()

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_curl(self, argv)

    def fixtures(self) -> Sequence[Fixture]:
        return fixtures.FIXTURES

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return fixtures.FAIL_CLOSED

    def unsupported(self) -> Mapping[str, str]:
        return fixtures.UNSUPPORTED

    # The approval's context (gitvow_bitbucket.approval_context): asked by the proxy off its
    # event loop for a staged merge, never on the agent gate's path.
    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        from gitvow_bitbucket.approval_context import subject

        return subject(request, tuple(operations))

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        from gitvow_bitbucket.approval_context import context

        return context(request, subject, ask)

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        from gitvow_bitbucket.approval_fixtures import APPROVAL_FIXTURES

        return APPROVAL_FIXTURES

    def approval_unsupported(self) -> Mapping[str, str]:
        return fixtures.APPROVAL_UNSUPPORTED

    def not_implemented(self) -> Mapping[str, str]:
        return fixtures.NOT_IMPLEMENTED
