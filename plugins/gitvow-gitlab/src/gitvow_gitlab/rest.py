"""GitLab REST v4: method + decoded path segments → operations and the project they touch.

The repository is the project's full path when the URL names it (``group%2Fsub%2Fproj`` →
``group/sub/proj``). A numeric project id cannot be resolved without asking GitLab, so it
gives ``repo=None`` and ``details["project_id"]``: gates that scope by repository must treat
``None`` as "unknown repository" and fail closed (``repo_not_in_config``), never as "any".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import parse_qsl

from gitvow.change import with_operations
from gitvow.comments import plain_encoding, strings_in
from gitvow.issues import draft_from_mapping
from gitvow.request import Classification, Request
from gitvow.routing import Match
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_gitlab.changes import CHANGE_READ_LIMIT, CHANGE_ROUTES, rest_change
from gitvow_gitlab.quick_actions import quick_actions
from gitvow_gitlab.routes import ROUTES, Route

#: The adapter's name, set on every classification so the pipeline need not copy it in.
ADAPTER = "gitlab"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LABEL_KEYS = frozenset({"labels", "add_labels"})
#: Only these add labels without being able to remove any (``labels`` replaces the whole set).
_ADD_ONLY_KEYS = frozenset({"add_labels"})
_IGNORED_KEYS = frozenset({"id", "iid", "merge_request_iid", "issue_iid", "epic_iid"})
_NOT_PROJECTS = frozenset({"import", "remote-import", "remote-import-s3", "user"})
# Bodies larger than this are not read for keys: the resolvers then assume the stricter reading.
_BODY_READ_LIMIT = 256 * 1024


def unknown(note: str, *, code: str = "mode_denied", repo: str | None = None,
            details: Mapping[str, object] | None = None) -> Classification:
    """``unknown`` from this adapter: denied at every mode, ``note`` shown to the agent."""
    return Classification((UNKNOWN,), repo=repo, adapter=ADAPTER, unknown_code=code, note=note,
                          details=details or {})


def project_repo(ref: str) -> tuple[str | None, dict[str, object]]:
    """``group/sub/proj`` → that path; ``123`` → None with ``project_id`` in the details."""
    if ref.isascii() and ref.isdigit():
        return None, {"project_id": int(ref)}
    return ref.strip("/") or None, {}


def grape_params(request: Request, limit: int = _BODY_READ_LIMIT) -> list[tuple[str, object]] | None:
    """Every top-level parameter of a request, in order: the query string, then the body (a
    form, or a JSON object), as GitLab's Grape merges them. None when the body cannot be read
    as the forge would read it (over the read limit, a content encoding, multipart, not UTF-8,
    not a JSON object): every reader below then refuses, never guesses.
    """
    pairs: list[tuple[str, object]] = list(parse_qsl(request.query, keep_blank_values=True))
    body = request.body
    if not body.strip():
        return pairs
    if len(body) > limit or not plain_encoding(request):
        return None
    content_type = request.header("content-type").split(";", 1)[0].strip().lower()
    if content_type.startswith("multipart/"):
        return None
    try:
        text = body.decode("utf-8")
        if content_type == "application/x-www-form-urlencoded":
            return pairs + list(parse_qsl(text, keep_blank_values=True))
        payload = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    return pairs + [(str(k), v) for k, v in payload.items()]


def param_keys(request: Request) -> frozenset[str] | None:
    """Top-level parameter names (form keys such as ``position[base_sha]`` count as ``position``)."""
    pairs = grape_params(request)
    return None if pairs is None else frozenset(_base_key(k) for k, _ in pairs)


def target_project(request: Request) -> object:
    """``target_project_id`` of a write (a merge request opened into another project), as
    sent: GitLab acts on that project too. Unreadable bodies give a marker that never
    resolves, so a repository gate in force refuses them."""
    if b"target_project_id" not in request.body and "target_project_id" not in request.query:
        return None
    pairs = grape_params(request)
    values = [str(v) for k, v in pairs or () if k == "target_project_id"]
    if pairs is None or not values:
        return "unreadable"  # named in the body but not where it could be read
    if len(set(values)) != 1 or not values[0].isascii() or not values[0].isdigit():
        return "unreadable"
    return int(values[0])


def param_values(request: Request, limit: int = _BODY_READ_LIMIT) -> dict[str, object] | None:
    """Top-level parameters by name; None if unreadable or if a name is given twice (which
    one Grape keeps is not ours to guess)."""
    pairs = grape_params(request, limit)
    if pairs is None:
        return None
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            return None
        found[key] = value
    return found


def text_values(request: Request, names: frozenset[str]) -> list[str] | None:
    """Every string value of the parameters ``names``, or None if unreadable.

    A JSON value that is not a string contributes every string inside it: the stricter
    reading of a body Grape would refuse anyway.
    """
    pairs = grape_params(request)
    if pairs is None:
        return None
    return [text for key, value in pairs if _base_key(key) in names for text in strings_in(value)]


def _base_key(key: str) -> str:
    return key.split("[", 1)[0]


def _resolve(route: Route, request: Request) -> tuple[str, ...]:
    if not route.resolver:
        return route.operations
    keys = param_keys(request)
    if route.resolver == "@mr_discussion":
        # A discussion with a diff position is a review comment; unreadable → the stricter review.
        return ("issue.comment",) if keys is not None and "position" not in keys else ("pr.review",)
    edit = "pr.edit" if route.resolver == "@mr_update" else "issue.edit"
    if keys is None:
        return (edit, "label.add")
    changed = keys - _IGNORED_KEYS
    if changed and changed <= _ADD_ONLY_KEYS:
        return ("label.add",)
    if changed & _LABEL_KEYS:
        return (edit, "label.add")
    return (edit,)


def classify_rest(request: Request, segments: list[str]) -> Classification:
    """Classify a request whose path (after ``/api/v4``) is ``segments`` (decoded)."""
    if request.method in READ_METHODS:
        repo, details = _repo_of(segments)
        return Classification((READ,), repo=repo, adapter=ADAPTER, details={"api": "rest", **details})
    match = ROUTES.match(request.method, segments)
    if match is None:
        repo, details = _repo_of(segments)
        return unknown(f"{request.method} /api/v4/{'/'.join(segments)} is not a GitLab route gitvow knows", repo=repo)
    repo, details = _repo_from_params(match)
    details = {"api": "rest", "route": match.template, **details}
    route = match.value
    if route.is_unknown:
        return unknown(route.reason, repo=repo, details=details)
    operations = _resolve(route, request)
    context = text_context(match.template)
    if context is not None:
        texts = text_values(request, TEXT_KEYS)
        if texts is None:
            return unknown("the note or description could not be read for quick actions", repo=repo, details=details)
        found = quick_actions(texts, context)
        if found.operations:
            operations = tuple(dict.fromkeys((*operations, *found.operations)))
            details = {**details, "quick_actions": found.operations}
            if UNKNOWN in found.operations:
                return Classification(operations, repo=repo, adapter=ADAPTER, note="; ".join(found.notes),
                                      details=details)
    change = rest_change(request, match, param_values(request, CHANGE_READ_LIMIT)) \
        if match.template in CHANGE_ROUTES else None
    if change is not None:
        # What the write changes (branch, paths, contents): judged by the change stage.
        return Classification(with_operations(operations, change), repo=repo, adapter=ADAPTER, details=details,
                              change=change)
    if "issue.create" in operations:
        # An issue (POST /projects/:id/issues) or an epic: title and description, from wherever Grape reads them.
        draft = draft_from_mapping(param_values(request), body="description")
        issues = (draft,) if draft is not None else ()
        return Classification(operations, repo=repo, adapter=ADAPTER, details=details, issues=issues)
    return Classification(operations, repo=repo, adapter=ADAPTER, details=details)


#: Parameters GitLab reads quick actions from: a note's ``body`` (``note`` for draft notes and
#: commit comments) and an issue's, epic's or merge request's ``description``.
TEXT_KEYS = frozenset({"body", "note", "description"})


def text_context(template: str) -> str | None:
    """The quick-action context of a REST route, or None if GitLab runs none there."""
    if template.startswith("/projects/:project/merge_requests"):
        return "merge_request"
    if template.startswith(("/projects/:project/issues", "/groups/:group/epics")):
        return "issue"
    if template.startswith("/projects/:project/repository/commits/:sha/"):
        return "commit"
    return None


def _repo_from_params(match: Match[Route]) -> tuple[str | None, dict[str, object]]:
    project = match.param("project")
    if project is not None:
        return project_repo(project)
    group = match.param("group")
    if group is not None:
        return None, {"group": group}
    return None, {}


def _repo_of(segments: list[str]) -> tuple[str | None, dict[str, object]]:
    """The project of a path the route table does not cover (reads, unmatched writes)."""
    if len(segments) >= 2 and segments[0] == "projects" and segments[1] not in _NOT_PROJECTS:
        return project_repo(segments[1])
    return None, {}
