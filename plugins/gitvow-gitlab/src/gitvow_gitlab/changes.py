"""What a GitLab REST write changes: the :class:`~gitvow.change.Change` of the commits, files,
branches, submodules and changelog APIs, read from the parameters the way Grape reads them.

* ``POST /projects/:id/repository/commits``: ``branch`` (created from ``start_branch`` or
  ``start_sha`` when given), ``force`` (anything but an explicit false is a forced update,
  ``ref.force``), and every ``actions[]`` entry: ``create``, ``update``, ``delete``, ``move``
  (its ``previous_path`` too), ``chmod``; ``content`` decoded by its ``encoding``.
* ``POST|PUT|DELETE /projects/:id/repository/files/:file_path``: the path from the URL (one
  segment, percent-decoded once, as Rails decodes it), ``branch``, ``start_branch``,
  ``content``, ``encoding``.
* ``POST /projects/:id/repository/branches``: a branch created; ``DELETE …/branches/:branch``:
  deleted (``ref.delete``). ``DELETE …/merged_branches`` deletes whichever branches GitLab finds
  merged: not established from the request, so refused even where deletions are allowed.
* ``POST …/repository/tags``: a tag created, judged by ``[branches]`` by its full ref
  (``refs/tags/v1``); ``DELETE …/tags/:tag``: deleted (``ref.delete``).
* ``PUT …/repository/submodules/:submodule`` moves a submodule pointer on ``branch``;
  ``POST …/repository/changelog`` writes ``file`` (``CHANGELOG.md``) on ``branch`` (the default
  branch when absent).
* ``POST /projects/:id/merge_requests`` names ``source_branch`` as the agent's branch (allowed
  patterns); ``PUT …/merge_requests/:iid`` with a ``target_branch`` retargets it, judged as a
  write to the new base by ``[branches]`` (an approval was given for the base it had). GraphQL's
  ``mergeRequestCreate``/``mergeRequestUpdate`` the same (``sourceBranch``, ``targetBranch``);
  the ``/target_branch`` quick action is refused (``data/quick_actions.tsv``).
* Cherry-picks and reverts (``…/commits/:sha/cherry_pick|revert``) change the paths of a commit
  the forge holds: not established from the request, refused.

Every parameter is read once: a name given twice (query string and body) or a body Grape would
read differently (a form with ``actions[]``, over the read limit) is unestablished, refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from gitvow.api_change import (
    FileWrite,
    WriteUnreadable,
    body_texts,
    branch_created,
    branch_deleted,
    canonical_branch,
    canonical_path,
    decode_content,
    file_change,
    tag_created,
    tag_deleted,
    unestablished,
)
from gitvow.change import BRANCH_PREFIX, CREATED, FAST_FORWARD, FORCED, Change, RefChange
from gitvow.request import Request
from gitvow.routing import Match
from gitvow_gitlab.routes import Route

_REPO = "/projects/:project/repository"
#: How much of a commits or files write is read (GitLab's own default cap on a request is larger:
#: over this, the write is unestablished, refused).
CHANGE_READ_LIMIT = 64 * 1024 * 1024
_ACTIONS = frozenset({"create", "update", "delete", "move", "chmod"})
_FALSE = (False, "false", "0", 0, None)
_ACTION_LIMIT = 10_000


def _branch(params: Mapping[str, object], name: str = "branch", *, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    return canonical_branch(value, f"the {name} parameter")


def _texts(params: Mapping[str, object]) -> Iterator[str]:
    """Every string of the parameters but the file contents (scanned decoded, with their path)."""
    return body_texts(dict(params), skip=_CONTENT_KEYS)


_CONTENT_KEYS = frozenset({"content"})


def _kind(params: Mapping[str, object]) -> str:
    if params.get("force", None) not in _FALSE:
        return FORCED
    if params.get("start_branch") is not None or params.get("start_sha") is not None:
        return CREATED
    return FAST_FORWARD


def _action(entry: object, number: int) -> FileWrite:
    if not isinstance(entry, dict):
        raise WriteUnreadable(f"actions[{number}] is not an object")
    action = entry.get("action")
    if action not in _ACTIONS:
        raise WriteUnreadable(f"actions[{number}] has an action other than create, update, delete, move, chmod")
    path = canonical_path(entry.get("file_path"), f"the file_path of actions[{number}]")
    previous = canonical_path(entry.get("previous_path"), f"the previous_path of actions[{number}]") \
        if action == "move" else None
    content: bytes | None = None
    if action in ("create", "update") or (action == "move" and entry.get("content") is not None):
        content = decode_content(entry.get("content"), entry.get("encoding"), f"actions[{number}]")
    return FileWrite(path, content, previous, deleted=action == "delete")


def _commits(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    actions = params.get("actions")
    if not isinstance(actions, list) or len(actions) > _ACTION_LIMIT:
        raise WriteUnreadable("actions is not a list of at most 10000 entries")
    files = [_action(entry, n) for n, entry in enumerate(actions)]
    return file_change(_branch(params), files, kind=_kind(params), texts=_texts(params),
                       base=str(params.get("start_branch") or params.get("start_sha") or ""))


def _url_param(match: Match[Route], params: Mapping[str, object], route: str, name: str) -> str | None:
    """A route parameter of the URL, unless the query or body names it too: Grape lets the route's
    value win, but a second spelling is not worth guessing about (unestablished)."""
    value = match.param(route)
    if name in params and params[name] != value:
        raise WriteUnreadable(f"{name} is given both in the URL and in the parameters")
    return value


def _files(match: Match[Route], params: Mapping[str, object], body: bytes, method: str) -> Change:
    path = canonical_path(_url_param(match, params, "file", "file_path"), "the file path of the URL")
    if method == "DELETE":
        write = FileWrite(path, deleted=True)
    else:
        write = FileWrite(path, decode_content(params.get("content"), params.get("encoding"), path))
    kind = CREATED if params.get("start_branch") is not None else FAST_FORWARD
    return file_change(_branch(params), [write], kind=kind, texts=_texts(params),
                       base=str(params.get("start_branch") or ""))


def _branch_create(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    return branch_created(canonical_branch(params.get("branch"), "the branch parameter"), str(params.get("ref") or ""))


def _branch_delete(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    return branch_deleted(canonical_branch(_url_param(match, params, "branch", "branch"), "the branch of the URL"))


def _tag_create(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    return tag_created(canonical_branch(params.get("tag_name"), "the tag_name parameter"), str(params.get("ref") or ""))


def _tag_delete(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    return tag_deleted(canonical_branch(_url_param(match, params, "tag", "tag_name"), "the tag of the URL"))


def _submodule(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    path = canonical_path(_url_param(match, params, "submodule", "submodule"), "the submodule path of the URL")
    return file_change(_branch(params), [FileWrite(path)], texts=_texts(params))


def _changelog(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    path = canonical_path(params.get("file", "CHANGELOG.md"), "the file parameter")
    return file_change(_branch(params, required=False), [FileWrite(path)], texts=_texts(params))


def _mr_create(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change | None:
    if params.get("source_branch") is None:
        return None  # required: GitLab opens nothing without it
    head = canonical_branch(params.get("source_branch"), "the source_branch parameter")
    if params.get("target_branch") is not None:
        canonical_branch(params.get("target_branch"), "the target_branch parameter")
    return Change(heads=(head,))


def retarget(value: object, what: str) -> Change | None:
    """A merge request's new base: a write to that branch, judged by ``[branches]``; None when the
    write leaves the base alone."""
    if value is None:
        return None
    return Change(refs=(RefChange(BRANCH_PREFIX + canonical_branch(value, what), "", "", FAST_FORWARD),))


def _mr_update(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change | None:
    return retarget(params.get("target_branch"), "the target_branch parameter")


def _merge_ref(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
    """``PUT …/merge_requests/:iid/merge_ref`` (re)writes ``refs/merge-requests/:iid/merge``, a
    ref that is no branch: judged by its full name (an agent fenced to ``agent/**`` may not)."""
    iid = _url_param(match, params, "iid", "merge_request_iid")
    if not iid or not iid.isdigit():
        return unestablished("the merge request's iid is not a number")
    return Change(refs=(RefChange(f"refs/merge-requests/{iid}/merge", "", "", CREATED),))


def _from_forge(what: str) -> Callable[[Match[Route], Mapping[str, object], bytes], Change]:
    def read(match: Match[Route], params: Mapping[str, object], body: bytes) -> Change:
        return unestablished(what)
    return read


_READERS: dict[str, Callable[[Match[Route], Mapping[str, object], bytes], Change | None]] = {
    "/projects/:project/merge_requests": _mr_create,
    "/projects/:project/merge_requests/:iid": _mr_update,
    f"{_REPO}/commits": _commits,
    f"{_REPO}/branches": _branch_create,
    f"{_REPO}/branches/:branch": _branch_delete,
    f"{_REPO}/tags": _tag_create,
    f"{_REPO}/tags/:tag": _tag_delete,
    f"{_REPO}/submodules/:submodule": _submodule,
    f"{_REPO}/changelog": _changelog,
    "/projects/:project/merge_requests/:iid/merge_ref": _merge_ref,
    f"{_REPO}/merged_branches": _from_forge("which branches it deletes is decided by GitLab, not the request"),
    f"{_REPO}/commits/:sha/cherry_pick": _from_forge("the paths it changes are those of a commit GitLab holds"),
    f"{_REPO}/commits/:sha/revert": _from_forge("the paths it changes are those of a commit GitLab holds"),
}

#: The write routes whose change is read here (the rest change no branch or file).
CHANGE_ROUTES = frozenset({*_READERS, f"{_REPO}/files/:file"})


_GRAPHQL_KEYS = {"filePath": "file_path", "previousPath": "previous_path", "content": "content"}


def graphql_merge_request_change(field: str, value: object) -> Change | None:
    """``mergeRequestCreate(input: {sourceBranch, targetBranch})`` names its head as the agent's
    branch; ``mergeRequestUpdate(input: {targetBranch})`` retargets (a write to the new base)."""
    try:
        if not isinstance(value, dict):
            raise WriteUnreadable(f"the input of {field} could not be read")
        if field == "mergeRequestUpdate":
            return retarget(value.get("targetBranch"), "the targetBranch of mergeRequestUpdate")
        if value.get("sourceBranch") is None:
            return None  # required by the schema: GitLab opens nothing without it
        head = canonical_branch(value.get("sourceBranch"), "the sourceBranch of mergeRequestCreate")
        canonical_branch(value.get("targetBranch"), "the targetBranch of mergeRequestCreate")
        return Change(heads=(head,))
    except WriteUnreadable as exc:
        return unestablished(str(exc))


def graphql_commit_change(value: object) -> Change:
    """The change of a ``commitCreate(input: {branch, startBranch, actions: [{action, filePath,
    previousPath, content, encoding}]})`` mutation: the same reading as the commits API (its
    enums ``CREATE``/``BASE64`` lower-cased). GraphQL has no ``force``."""
    try:
        if not isinstance(value, dict):
            raise WriteUnreadable("the input of commitCreate could not be read")
        actions = value.get("actions")
        if not isinstance(actions, list) or len(actions) > _ACTION_LIMIT:
            raise WriteUnreadable("actions is not a list of at most 10000 entries")
        files = []
        for number, entry in enumerate(actions):
            if not isinstance(entry, dict):
                raise WriteUnreadable(f"actions[{number}] is not an object")
            rest: dict[str, object] = {_GRAPHQL_KEYS[k]: v for k, v in entry.items() if k in _GRAPHQL_KEYS}
            for key in ("action", "encoding"):
                if isinstance(entry.get(key), str):
                    rest[key] = str(entry[key]).lower()
            files.append(_action(rest, number))
        start = value.get("startBranch")
        return file_change(canonical_branch(value.get("branch"), "the branch of commitCreate"), files,
                           kind=CREATED if start is not None else FAST_FORWARD, base=str(start or ""),
                           body=str(value.get("message") or "").encode("utf-8", "surrogatepass"))
    except WriteUnreadable as exc:
        return unestablished(str(exc))


def rest_change(request: Request, match: Match[Route], params: Mapping[str, object] | None) -> Change | None:
    """The change of a REST write on ``match`` (its parameters ``params``, None if unreadable),
    or None when the route changes no branch or file."""
    template = match.template
    if template not in CHANGE_ROUTES:
        return None
    if params is None:
        return unestablished("the parameters could not be read as GitLab reads them (a name given twice, a form "
                             "body, or over the read limit)")
    try:
        if template == f"{_REPO}/files/:file":
            return _files(match, params, request.body, request.method)
        return _READERS[template](match, params, request.body)
    except WriteUnreadable as exc:
        return unestablished(str(exc))


__all__ = ["CHANGE_READ_LIMIT", "CHANGE_ROUTES", "graphql_commit_change", "graphql_merge_request_change", "rest_change",
           "retarget"]
