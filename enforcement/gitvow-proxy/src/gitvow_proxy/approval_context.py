"""What the forge says about a staged request: the approval's context, fetched for the human.

A merge staged as ``PUT …/pulls/7/merge`` or ``mergePullRequest(pullRequestId: "PR_kw…")``
tells a human nothing by itself. When the proxy stages a ``pr.create`` or ``pr.merge`` it asks
the forge, with the credential it injects, about what the request acts on:

- a **merge**: the repository, number, title, author, head and base branches, the head sha,
  mergeability, the checks and statuses of the head, the review state, and the changed files
  with their additions and deletions and the diff;
- a **creation**: the comparison of base and head (files, diff, the head sha).

GitHub REST and GraphQL (a node id is resolved to its pull request or repository by one
``node(id:)`` query), GitLab merge requests (a merge by API, by GraphQL ``mergeRequestAccept``
or by a ``/merge`` quick action in a note) and Gitea/Forgejo. It runs off the request path (the
proxy calls :func:`gather` in a worker thread after answering the agent), within
``CONTEXT_SECONDS`` in all and ``ANSWER_LIMIT`` bytes per answer; the diff is cut at
``DIFF_LIMIT`` bytes (``truncated`` says so). Anything that fails is a :class:`Context` whose
``error`` says what, shown plainly; it never blocks or decides an approval.

The model is by kind (``merge``, ``create``; a held push adds ``push`` with its ref updates
and paths): each kind fills the parts it has and leaves the others None.

:func:`head_now` asks again for the head only, right before an approved merge or creation is
sent: the proxy pins a merge to the head the human saw (:func:`pin`), and refuses and restages
when it moved (``approval_head_moved``).
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlsplit

from gitvow.graphql import GraphQLReader, GraphQLRefused

log = logging.getLogger("gitvow_proxy")

#: Longest single answer read from the forge.
ANSWER_LIMIT = 2 * 1024 * 1024
#: The diff shown is cut here (the human is told, and the files list stays complete up to FILE_LIMIT).
DIFF_LIMIT = 256 * 1024
FILE_LIMIT = 300
#: The whole fetch, every request included.
CONTEXT_SECONDS = 20.0
REQUEST_SECONDS = 10.0
MERGE, CREATE = "merge", "create"

#: ``get(method, path, body, accept)`` → ``(status, body)``; raises OSError on transport failure.
Get = Callable[[str, str, bytes, str], tuple[int, bytes]]


class ContextError(Exception):
    """The forge did not say what the approval needs; the message is shown to the human."""


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    additions: int | None = None
    deletions: int | None = None
    status: str = ""


@dataclass(frozen=True, slots=True)
class PullRequest:
    """A pull (merge) request as the forge describes it."""

    number: int | None = None
    title: str = ""
    author: str = ""
    head: str = ""
    base: str = ""
    head_sha: str = ""
    state: str = ""
    mergeable: str = ""
    checks: str = ""
    reviews: str = ""
    url: str = ""
    #: Whether the forge says it is merged (None: it did not say).
    merged: bool | None = None


@dataclass(frozen=True, slots=True)
class Changes:
    """What the head changes against the base."""

    files: tuple[FileChange, ...] = ()
    diff: str = ""
    truncated: bool = False
    commits: int | None = None

    @property
    def additions(self) -> int:
        return sum(f.additions or 0 for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deletions or 0 for f in self.files)


@dataclass(frozen=True, slots=True)
class Context:
    """The forge's answer for one approval (``error`` set: the fetch failed, and why)."""

    kind: str
    repo: str | None = None
    fetched_at: float = 0.0
    error: str | None = None
    pull: PullRequest | None = None
    changes: Changes | None = None
    #: The head the human is shown and the send is pinned to.
    head_sha: str = ""
    head: str = ""
    base: str = ""
    number: int | None = None
    notes: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.changes is not None:
            data["changes"]["additions"] = self.changes.additions
            data["changes"]["deletions"] = self.changes.deletions
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Context:
        pull = data.get("pull")
        changes = data.get("changes")
        return cls(
            kind=str(data.get("kind", "")), repo=data.get("repo"), fetched_at=float(data.get("fetched_at") or 0.0),
            error=data.get("error"), head_sha=str(data.get("head_sha") or ""), head=str(data.get("head") or ""),
            base=str(data.get("base") or ""), number=data.get("number"), notes=tuple(data.get("notes") or ()),
            pull=PullRequest(**pull) if isinstance(pull, Mapping) else None,
            changes=Changes(files=tuple(FileChange(**f) for f in changes.get("files", ())), diff=changes.get("diff", ""),
                            truncated=bool(changes.get("truncated")), commits=changes.get("commits"))
            if isinstance(changes, Mapping) else None,
        )


# -- reaching the forge -------------------------------------------------------------------------


def forge_get(scheme: str, host: str, port: int, headers: Callable[[str], Mapping[str, str]],
              context: ssl.SSLContext | None, deadline: float) -> Get:
    """A :data:`Get` to one forge host; ``headers(path)`` gives the credential headers."""

    def get(method: str, target: str, body: bytes, accept: str) -> tuple[int, bytes]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError("out of time")
        sent = {"Accept": accept, "User-Agent": "gitvow-proxy", **headers(target.partition("?")[0])}
        if body:
            sent["Content-Type"] = "application/json"
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=min(left, REQUEST_SECONDS), context=context)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=min(left, REQUEST_SECONDS))
        try:
            connection.request(method, target, body=body or None, headers=sent)
            response = connection.getresponse()
            answer = response.read(ANSWER_LIMIT + 1)
        finally:
            connection.close()
        if len(answer) > ANSWER_LIMIT:
            raise OSError(f"an answer over {ANSWER_LIMIT} bytes")
        return response.status, answer

    return get


def _json(get: Get, path: str, *, method: str = "GET", body: bytes = b"") -> Any:
    status, answer = get(method, path, body, "application/json")
    if status != 200:
        raise ContextError(f"{method} {path.partition('?')[0]} answered {status}")
    try:
        return json.loads(answer)
    except ValueError:
        raise ContextError(f"{method} {path.partition('?')[0]} did not answer JSON") from None


def _optional(get: Get, path: str, notes: list[str]) -> Any:
    """An answer the context can do without (checks, reviews): a failure becomes a note."""
    try:
        return _json(get, path)
    except (ContextError, OSError) as exc:
        notes.append(str(exc))
        return None


def _cut(diff: str) -> tuple[str, bool]:
    data = diff.encode()
    if len(data) <= DIFF_LIMIT:
        return diff, False
    return data[:DIFF_LIMIT].decode("utf-8", "ignore"), True


def _counts(patch: str) -> tuple[int, int]:
    lines = patch.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return added, removed


# -- what the staged request acts on ------------------------------------------------------------

_READER = GraphQLReader()


@dataclass(frozen=True, slots=True)
class Subject:
    """What the staged request names: a pull request (repo + number, or a node id), or a
    repository's head and base for a creation."""

    kind: str
    repo: str | None = None
    number: int | None = None
    node: str | None = None
    head: str = ""
    base: str = ""
    project: str | None = None  # GitLab's project id or path, as the request gave it


def _fields_of(body: bytes, url: str) -> dict[str, Any]:
    query = dict(parse_qsl(urlsplit(url).query))
    try:
        data = json.loads(body) if body else {}
    except (ValueError, UnicodeDecodeError):
        data = {}
    return {**query, **data} if isinstance(data, dict) else query


def _graphql_input(body: bytes, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The arguments of the document's one field named in ``names`` (its ``input`` merged in);
    None when there is none or several: a context, and a pin, describe one pull request."""
    try:
        request = _READER.read(body)
    except GraphQLRefused:
        return None
    tops = [top for top in request.operation.fields if top.name in names]
    if len(tops) != 1:
        return None
    found = {name: tops[0].argument(name, request.variables) for name in tops[0].arguments}
    nested = found.get("input")
    return {**found, **nested} if isinstance(nested, dict) else found


_GITHUB_PULL = re.compile(r"/repos/([^/]+)/([^/]+)/pulls(?:/(\d+)/merge)?$")
_GITLAB_MR = re.compile(r"/projects/([^/]+)/merge_requests(?:/(\d+)/(merge|notes))?$")
_GITEA_PULL = re.compile(r"/repos/([^/]+)/([^/]+)/pulls(?:/(\d+)/merge)?$")


def subject(adapter: str, operations: tuple[str, ...], url: str, body: bytes) -> Subject | None:
    """What a staged ``pr.merge`` or ``pr.create`` acts on, read where the forge reads it."""
    kind = MERGE if "pr.merge" in operations else CREATE if "pr.create" in operations else None
    if kind is None:
        return None
    path = urlsplit(url).path.rstrip("/")
    if path.endswith("/graphql"):
        return _graphql_subject(adapter, kind, body)
    fields = _fields_of(body, url)
    if adapter == "gitlab":
        found = _GITLAB_MR.search(path)
        if found is None:
            return None
        project = found.group(1)
        if found.group(2):
            return Subject(MERGE, number=int(found.group(2)), project=project)
        return Subject(kind, project=project, head=str(fields.get("source_branch", "")),
                       base=str(fields.get("target_branch", "")))
    match = (_GITEA_PULL if adapter == "gitea" else _GITHUB_PULL).search(path)
    if match is None:
        return None
    repo = f"{match.group(1)}/{match.group(2)}".lower()
    if match.group(3):
        return Subject(MERGE, repo=repo, number=int(match.group(3)))
    return Subject(kind, repo=repo, head=str(fields.get("head", "")), base=str(fields.get("base", "")))


def _graphql_subject(adapter: str, kind: str, body: bytes) -> Subject | None:
    if adapter == "gitlab":
        found = _graphql_input(body, ("mergeRequestAccept",))
        if found and found.get("projectPath") and found.get("iid"):
            return Subject(MERGE, project=quote(str(found["projectPath"]), safe=""), number=int(str(found["iid"])))
        return None
    if kind == MERGE:
        found = _graphql_input(body, ("mergePullRequest", "enablePullRequestAutoMerge"))
        return Subject(MERGE, node=str(found["pullRequestId"])) if found and found.get("pullRequestId") else None
    found = _graphql_input(body, ("createPullRequest",))
    if not found or not found.get("repositoryId"):
        return None
    return Subject(CREATE, node=str(found["repositoryId"]), head=str(found.get("headRefName") or ""),
                   base=str(found.get("baseRefName") or ""))


# -- GitHub -------------------------------------------------------------------------------------

_NODE = """query($id: ID!) { node(id: $id) { __typename
  ... on PullRequest { number repository { nameWithOwner } }
  ... on Repository { nameWithOwner } } }"""


def _github_prefix(url: str) -> str:
    """REST's root on this host: ``/api/v3`` on GHES, none on api.github.com."""
    path = urlsplit(url).path
    if path.startswith("/api/"):
        return "/api/v3"
    return ""


def _github_node(get: Get, url: str, node: str) -> tuple[str, int | None]:
    graphql = "/api/graphql" if urlsplit(url).path.startswith("/api/") else "/graphql"
    answer = _json(get, graphql, method="POST", body=json.dumps({"query": _NODE, "variables": {"id": node}}).encode())
    found = (answer.get("data") or {}).get("node") if isinstance(answer, dict) else None
    if not isinstance(found, dict):
        raise ContextError(f"the forge does not know node {node}")
    if found.get("__typename") == "PullRequest":
        return str(found["repository"]["nameWithOwner"]).lower(), int(found["number"])
    if found.get("__typename") == "Repository":
        return str(found["nameWithOwner"]).lower(), None
    raise ContextError(f"node {node} is a {found.get('__typename')}, not a pull request or repository")


def _github_checks(get: Get, root: str, sha: str, notes: list[str]) -> str:
    runs = _optional(get, f"{root}/commits/{sha}/check-runs?per_page=100", notes)
    status = _optional(get, f"{root}/commits/{sha}/status", notes)
    parts = []
    if isinstance(runs, dict) and runs.get("check_runs"):
        outcomes: dict[str, int] = {}
        for run in runs["check_runs"]:
            key = run.get("conclusion") or run.get("status") or "unknown"
            outcomes[key] = outcomes.get(key, 0) + 1
        parts.append(f"{len(runs['check_runs'])} checks: " + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())))
        failing = [r.get("name", "?") for r in runs["check_runs"] if r.get("conclusion") in ("failure", "timed_out")]
        if failing:
            parts.append("failing: " + ", ".join(failing[:10]))
    if isinstance(status, dict) and status.get("statuses"):
        parts.append(f"statuses {status.get('state')}: "
                     + ", ".join(f"{s.get('context')} {s.get('state')}" for s in status["statuses"][:10]))
    return "; ".join(parts) or "none reported"


def _github_reviews(get: Get, root: str, number: int, notes: list[str]) -> str:
    reviews = _optional(get, f"{root}/pulls/{number}/reviews?per_page=100", notes)
    if not isinstance(reviews, list) or not reviews:
        return "no reviews"
    latest: dict[str, str] = {}
    for review in reviews:
        who = (review.get("user") or {}).get("login", "?")
        if review.get("state") in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[who] = review["state"]
    if not latest:
        return f"{len(reviews)} comments, no approval"
    return ", ".join(f"{state.lower().replace('_', ' ')} by {who}" for who, state in latest.items())


def _github_files(items: Any) -> tuple[tuple[FileChange, ...], str]:
    files, patches = [], []
    for item in items if isinstance(items, list) else []:
        name = str(item.get("filename", "?"))
        files.append(FileChange(name, item.get("additions"), item.get("deletions"), str(item.get("status", ""))))
        if item.get("patch"):
            patches.append(f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n{item['patch']}\n")
        elif item.get("status") != "removed":
            patches.append(f"diff --git a/{name} b/{name}\n(no text diff: binary or too large)\n")
    return tuple(files[:FILE_LIMIT]), "".join(patches)


def github(get: Get, url: str, what: Subject) -> Context:
    notes: list[str] = []
    repo, number = what.repo, what.number
    if what.node is not None:
        repo, found = _github_node(get, url, what.node)
        number = found if what.kind == MERGE else None
    root = f"{_github_prefix(url)}/repos/{repo}"
    if what.kind == MERGE:
        pr = _json(get, f"{root}/pulls/{number}")
        head_sha = str(pr["head"]["sha"])
        mergeable = pr.get("mergeable")
        pull = PullRequest(
            number=int(pr["number"]), title=str(pr.get("title", "")), author=str((pr.get("user") or {}).get("login", "")),
            head=str(pr["head"].get("ref", "")), base=str(pr["base"].get("ref", "")), head_sha=head_sha,
            state=str(pr.get("state", "")) + (" (draft)" if pr.get("draft") else ""),
            mergeable={True: "yes", False: "no", None: "not computed yet"}.get(mergeable, str(mergeable))
            + (f" ({pr['mergeable_state']})" if pr.get("mergeable_state") else ""),
            checks=_github_checks(get, root, head_sha, notes), reviews=_github_reviews(get, root, int(pr["number"]), notes),
            url=str(pr.get("html_url", "")), merged=pr.get("merged") if isinstance(pr.get("merged"), bool) else None,
        )
        files, diff = _github_files(_json(get, f"{root}/pulls/{number}/files?per_page=100"))
        cut, truncated = _cut(diff)
        return Context(MERGE, repo=repo, pull=pull, changes=Changes(files, cut, truncated, pr.get("commits")),
                       head_sha=head_sha, head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    compare = _json(get, f"{root}/compare/{quote(what.base, safe='')}...{quote(what.head, safe=':')}")
    commits = compare.get("commits") or []
    head_sha = str(commits[-1]["sha"]) if commits else ""
    files, diff = _github_files(compare.get("files"))
    cut, truncated = _cut(diff)
    return Context(CREATE, repo=repo, changes=Changes(files, cut, truncated, compare.get("total_commits", len(commits))),
                   head_sha=head_sha, head=what.head, base=what.base, notes=tuple(notes))


# -- GitLab -------------------------------------------------------------------------------------


def _gitlab_changes(items: Any) -> tuple[tuple[FileChange, ...], str]:
    files, patches = [], []
    for item in items if isinstance(items, list) else []:
        name = str(item.get("new_path") or item.get("old_path") or "?")
        patch = str(item.get("diff") or "")
        added, removed = _counts(patch)
        status = "added" if item.get("new_file") else "removed" if item.get("deleted_file") else \
            "renamed" if item.get("renamed_file") else "modified"
        files.append(FileChange(name, added, removed, status))
        patches.append(f"diff --git a/{item.get('old_path', name)} b/{name}\n{patch}")
    return tuple(files[:FILE_LIMIT]), "".join(patches)


def gitlab(get: Get, url: str, what: Subject) -> Context:
    notes: list[str] = []
    api = urlsplit(url).path.split("/api/v4/", 1)[0] + "/api/v4"
    if what.kind == MERGE:
        mr = _json(get, f"{api}/projects/{what.project}/merge_requests/{what.number}")
        refs = mr.get("references") or {}
        repo = str(refs.get("full", "")).rsplit("!", 1)[0].lower() or None
        pipeline = mr.get("head_pipeline") or mr.get("pipeline") or {}
        approvals = _optional(get, f"{api}/projects/{what.project}/merge_requests/{what.number}/approvals", notes)
        approved = [a["user"]["username"] for a in (approvals or {}).get("approved_by", []) if a.get("user")]
        pull = PullRequest(
            number=int(mr["iid"]), title=str(mr.get("title", "")), author=str((mr.get("author") or {}).get("username", "")),
            head=str(mr.get("source_branch", "")), base=str(mr.get("target_branch", "")), head_sha=str(mr.get("sha", "")),
            state=str(mr.get("state", "")) + (" (draft)" if mr.get("draft") else ""),
            mergeable=str(mr.get("detailed_merge_status") or mr.get("merge_status") or "unknown"),
            checks=f"pipeline {pipeline.get('status')}" if pipeline else "no pipeline",
            reviews=("approved by " + ", ".join(approved)) if approved else "no approvals",
            url=str(mr.get("web_url", "")), merged=mr.get("state") == "merged" if mr.get("state") else None,
        )
        diffs = _json(get, f"{api}/projects/{what.project}/merge_requests/{what.number}/diffs?per_page=100")
        files, diff = _gitlab_changes(diffs)
        cut, truncated = _cut(diff)
        return Context(MERGE, repo=repo, pull=pull, changes=Changes(files, cut, truncated), head_sha=pull.head_sha,
                       head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    project = _json(get, f"{api}/projects/{what.project}")
    repo = str(project.get("path_with_namespace", "")).lower() or None
    compare = _json(get, f"{api}/projects/{what.project}/repository/compare?from={quote(what.base, safe='')}"
                         f"&to={quote(what.head, safe='')}&straight=false")
    files, diff = _gitlab_changes(compare.get("diffs"))
    cut, truncated = _cut(diff)
    head_sha = str((compare.get("commit") or {}).get("id", ""))
    return Context(CREATE, repo=repo, changes=Changes(files, cut, truncated, len(compare.get("commits") or [])),
                   head_sha=head_sha, head=what.head, base=what.base, notes=tuple(notes))


# -- Gitea and Forgejo --------------------------------------------------------------------------


def _gitea_pull(get: Get, root: str, number: int | None, notes: list[str]) -> PullRequest:
    pr = _json(get, f"{root}/pulls/{number}")
    head_sha = str(pr["head"]["sha"])
    status = _optional(get, f"{root}/commits/{head_sha}/status", notes)
    statuses = (status or {}).get("statuses") or []
    reviews = _optional(get, f"{root}/pulls/{number}/reviews", notes) or []
    states = [f"{str(r.get('state', '')).lower()} by {(r.get('user') or {}).get('login', '?')}" for r in reviews
              if r.get("state") in ("APPROVED", "REQUEST_CHANGES")]
    checks = "none reported"
    if statuses:
        checks = f"statuses {(status or {}).get('state')}: " + ", ".join(
            f"{s.get('context')} {s.get('status') or s.get('state')}" for s in statuses[:10])
    return PullRequest(
        number=int(pr["number"]), title=str(pr.get("title", "")), author=str((pr.get("user") or {}).get("login", "")),
        head=str(pr["head"].get("ref", "")), base=str(pr["base"].get("ref", "")), head_sha=head_sha,
        state=str(pr.get("state", "")), mergeable="yes" if pr.get("mergeable") else "no", checks=checks,
        reviews=", ".join(states) or "no reviews", url=str(pr.get("html_url", "")),
        merged=pr.get("merged") if isinstance(pr.get("merged"), bool) else None,
    )


def _gitea_files(items: Any) -> tuple[FileChange, ...]:
    return tuple(FileChange(str(f.get("filename", "?")), f.get("additions"), f.get("deletions"), str(f.get("status", "")))
                 for f in (items if isinstance(items, list) else [])[:FILE_LIMIT])


def gitea(get: Get, url: str, what: Subject) -> Context:
    notes: list[str] = []
    api = urlsplit(url).path.split("/api/v1/", 1)[0] + "/api/v1"
    root = f"{api}/repos/{what.repo}"
    if what.kind == MERGE:
        pull = _gitea_pull(get, root, what.number, notes)
        files = _gitea_files(_json(get, f"{root}/pulls/{what.number}/files?limit=100"))
        code, text = get("GET", f"{root}/pulls/{what.number}.diff", b"", "text/plain")
        cut, truncated = _cut(text.decode("utf-8", "replace")) if code == 200 else ("", False)
        if code != 200:
            notes.append(f"the diff answered {code}")
        return Context(MERGE, repo=what.repo, pull=pull, changes=Changes(files, cut, truncated), head_sha=pull.head_sha,
                       head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    compare = _json(get, f"{root}/compare/{quote(what.base, safe='')}...{quote(what.head, safe=':')}")
    commits = compare.get("commits") or []
    head_sha = str(commits[-1].get("sha", "")) if commits else ""
    return Context(CREATE, repo=what.repo,
                   changes=Changes(_gitea_files(compare.get("files")), "", False, compare.get("total_commits", len(commits))),
                   head_sha=head_sha, head=what.head, base=what.base,
                   notes=("Gitea's API gives no diff of a comparison: the files are listed",))


FORGES: dict[str, Callable[[Get, str, Subject], Context]] = {"github": github, "gitlab": gitlab, "gitea": gitea}


def gather(adapter: str, operations: tuple[str, ...], url: str, body: bytes, get: Get,
           now: Callable[[], float] = time.time) -> Context | None:
    """The context of a staged request, or None when it has none (not a merge or creation, a
    forge without a context reader). Never raises: a failure is a context with ``error``."""
    reader = FORGES.get(adapter)
    if reader is None or not ({"pr.merge", "pr.create"} & set(operations)):
        return None
    kind = MERGE if "pr.merge" in operations else CREATE
    if _is_jsonrpc(body):
        return Context(kind, fetched_at=now(), error="an MCP tool call: the forge's context is not fetched for it; "
                       "read the tool's arguments above")
    what = subject(adapter, operations, url, body)
    if what is None:
        return Context(kind, fetched_at=now(), error="the request does not say which pull request or branches it acts on")
    try:
        found = reader(get, url, what)
    except (ContextError, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        why = str(exc) if isinstance(exc, ContextError | OSError) else f"the forge's answer lacked {exc}"
        return Context(what.kind, repo=what.repo, fetched_at=now(), error=f"could not ask the forge: {why}",
                       number=what.number, head=what.head, base=what.base)
    return Context(**{**{f: getattr(found, f) for f in found.__dataclass_fields__}, "fetched_at": now()})


def _is_jsonrpc(body: bytes) -> bool:
    try:
        data = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return False
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and "jsonrpc" in first


def context_now(adapter: str, operations: tuple[str, ...], url: str, body: bytes,
                headers: Callable[[str], Mapping[str, str]], tls: ssl.SSLContext | None) -> Context | None:
    """Worker thread: what the forge says about the approval's subject now, not kept (None: it
    has no context; raises ContextError when the forge cannot say)."""
    parts = urlsplit(url)
    scheme, host = parts.scheme or "https", parts.hostname or ""
    get = forge_get(scheme, host, parts.port or (443 if scheme == "https" else 80), headers, tls,
                    time.monotonic() + CONTEXT_SECONDS)
    found = gather(adapter, operations, url, body, get)
    if found is not None and found.error:
        raise ContextError(found.error)
    return found


def head_now(adapter: str, operations: tuple[str, ...], url: str, body: bytes,
             headers: Callable[[str], Mapping[str, str]], tls: ssl.SSLContext | None) -> str:
    """Worker thread: the head sha as the forge says it now (raises ContextError when it cannot say)."""
    found = context_now(adapter, operations, url, body, headers, tls)
    return found.head_sha if found is not None else ""


# -- kept with the approval ---------------------------------------------------------------------

#: The store note (:meth:`gitvow_proxy.store.Store.annotate`) that holds an approval's context.
CONTEXT_NOTE = "context"


class _Notes(Protocol):
    def annotations(self, approval_id: str) -> dict[str, str]: ...


def stored_context(store: _Notes, approval_id: str) -> Context | None:
    """The context kept for an approval, or None (not fetched yet, or unreadable)."""
    try:
        text = store.annotations(approval_id).get(CONTEXT_NOTE)
        return None if text is None else Context.from_json(json.loads(text))
    except Exception:  # a note the store garbled is no context: the desk shows none
        return None


def fetch_and_keep(store: Any, approval_id: str, adapter_name: str, operations: tuple[str, ...], url: str,
                   body: bytes, headers: Callable[[str], Mapping[str, str]], tls: ssl.SSLContext | None) -> Context | None:
    """Worker thread: ask the forge about a staged approval and keep the answer with it (the
    store note is the cache: one fetch per approval). Never raises."""
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme or "https", parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        get = forge_get(scheme, host, port, headers, tls, time.monotonic() + CONTEXT_SECONDS)
        found = gather(adapter_name, operations, url, body, get)
        if found is not None:
            store.annotate(approval_id, CONTEXT_NOTE, json.dumps(found.as_json()))
        return found
    except Exception as exc:  # the store is down, or worse: the approval stands without its context
        log.warning("gitvow: no context for approval %s: %s: %s", approval_id, type(exc).__name__, exc)
        return None


# -- pinning ------------------------------------------------------------------------------------


def pin(adapter: str, url: str, body: bytes, head_sha: str) -> bytes:
    """The staged merge's body with the head the human saw as the forge's expected head:
    GitHub REST ``sha``, GraphQL ``expectedHeadOid``, GitLab ``sha``, Gitea ``head_commit_id``.
    A field the agent already set is kept (the forge then checks that one). Unchanged when the
    body cannot carry it (a GitLab ``/merge`` note: the proxy checks the head right before it
    sends instead)."""
    if not head_sha or _is_jsonrpc(body):
        return body
    path = urlsplit(url).path.rstrip("/")
    if path.endswith("/graphql"):
        return _pin_graphql(body, head_sha) if adapter == "github" else body
    if adapter == "gitlab" and not path.endswith("/merge"):
        return body
    key = {"github": "sha", "gitlab": "sha", "gitea": "head_commit_id"}.get(adapter)
    if key is None:
        return body
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return body
    if not isinstance(data, dict) or data.get(key):
        return body
    return json.dumps({**data, key: head_sha}).encode()


def _pin_graphql(body: bytes, head_sha: str) -> bytes:
    if _graphql_input(body, ("mergePullRequest",)) is None:
        return body  # not exactly one merge: the head seen belongs to no single one of them
    return _pin_graphql_merge(body, head_sha)


def _pin_graphql_merge(body: bytes, head_sha: str) -> bytes:
    """``expectedHeadOid`` into every ``mergePullRequest(input:)``: into the input variable's
    value when the input is a variable, into the literal object when it is written inline."""
    from graphql import parse, print_ast
    from graphql.language import (
        ArgumentNode,
        FieldNode,
        NameNode,
        ObjectFieldNode,
        ObjectValueNode,
        StringValueNode,
        VariableNode,
        Visitor,
        visit,
    )

    try:
        payload = json.loads(body)
        document = parse(payload["query"], no_location=True)
        variables = dict(payload.get("variables") or {})
    except Exception:
        return body
    changed: list[str] = []

    class Pin(Visitor):
        def leave_argument(self, node: ArgumentNode, _key: object, _parent: object, _path: object,
                           ancestors: list[object]) -> ArgumentNode | None:
            owner = next((a for a in reversed(ancestors) if isinstance(a, FieldNode)), None)
            if owner is None or owner.name.value != "mergePullRequest" or node.name.value != "input":
                return None
            value = node.value
            if isinstance(value, VariableNode):
                given = variables.get(value.name.value)
                if isinstance(given, dict) and not given.get("expectedHeadOid"):
                    variables[value.name.value] = {**given, "expectedHeadOid": head_sha}
                    changed.append("variable")
                return None
            if isinstance(value, ObjectValueNode) and not any(f.name.value == "expectedHeadOid" for f in value.fields):
                extra = ObjectFieldNode(name=NameNode(value="expectedHeadOid"), value=StringValueNode(value=head_sha))
                changed.append("literal")
                return ArgumentNode(name=node.name, value=ObjectValueNode(fields=(*value.fields, extra)))
            return None

    pinned = visit(document, Pin())
    if not changed:
        return body
    return json.dumps({**payload, "query": print_ast(pinned), "variables": variables or payload.get("variables")}).encode()


__all__ = [
    "CONTEXT_NOTE",
    "CONTEXT_SECONDS",
    "CREATE",
    "DIFF_LIMIT",
    "MERGE",
    "Changes",
    "Context",
    "ContextError",
    "FileChange",
    "PullRequest",
    "Subject",
    "context_now",
    "fetch_and_keep",
    "forge_get",
    "gather",
    "head_now",
    "pin",
    "stored_context",
    "subject",
]
