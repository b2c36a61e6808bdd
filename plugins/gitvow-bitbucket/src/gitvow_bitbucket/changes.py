"""What a Bitbucket API write changes: the :class:`~gitvow.change.Change` of its branches, tags,
commits and pull-request targets, read where Bitbucket reads it.

Bitbucket Cloud (REST 2.0):

* ``POST …/refs/branches`` (``{"name", "target": {"hash"}}``) creates a branch, ``DELETE
  …/refs/branches/{name}`` deletes it (``ref.delete``); ``…/refs/tags`` the same for a tag
  (judged by ``[branches]`` by its full ref, ``refs/tags/v1``).
* ``POST …/src`` commits a form (urlencoded or multipart): every field but ``message``,
  ``author``, ``parents``, ``files`` and ``branch`` is a file, its name the path (one leading
  ``/`` dropped: ``/message`` is the file called ``message``); each path in ``files`` that no
  field uploads is deleted. The branch is ``branch``, else the repository's main branch. The
  same names in the query string are read too; a name given twice is unestablished.
* ``POST …/pullrequests`` names ``source.branch.name`` as the agent's branch (allowed patterns);
  ``PUT …/pullrequests/{id}`` with a ``destination`` retargets it: a write to the new base,
  judged by ``[branches]`` (an approval was given for the base it had).

Bitbucket Data Center (REST 1.0): ``POST …/branches`` and ``branch-utils`` (create, delete:
``{"name": "refs/heads/x"}``), ``git/…/tags``, ``PUT …/browse/{path}`` (a multipart commit of one
file: ``content``, ``branch``, ``sourceBranch``, ``message``), pull requests' ``fromRef``/``toRef``.
Applying a suggestion and fork syncing change what the forge holds (a comment's suggestion, the
upstream's refs): unestablished, refused.

Cloud's API host does not serve git: its main branch is read from the API
(``/2.0/repositories/{repo}``'s ``mainbranch.name``); Data Center's from git at ``/scm/…``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gitvow.api_change import (
    SMALL_BODY,
    BodyUnreadable,
    FileWrite,
    WriteUnreadable,
    body_texts,
    branch_created,
    branch_deleted,
    canonical_branch,
    canonical_path,
    file_change,
    read_json,
    tag_created,
    tag_deleted,
    unestablished,
)
from gitvow.change import BRANCH_PREFIX, CREATED, DELETED, FAST_FORWARD, Change, RefChange
from gitvow.comments import plain_encoding
from gitvow.request import Request
from gitvow.routing import Match, Route
from gitvow_bitbucket.forms import FORM_LIMIT, form_fields, query_fields

#: Where Cloud's API describes a repository and names its main branch (see ``Change.default_branch_at``).
CLOUD_REPOSITORY_AT = "/2.0/repositories/{repo}#mainbranch.name"
#: The fields of ``POST …/src`` that are not files.
_SRC_META = frozenset({"message", "author", "parents", "files", "branch"})
_TAG_PREFIX = "refs/tags/"

R = "/repositories/{workspace}/{repo_slug}"
PR = R + "/pullrequests/{pull_request_id}"
P = "/projects/{projectKey}/repos/{repositorySlug}"
DPR = "/api/latest" + P + "/pull-requests/{pullRequestId}"


def _json(request: Request, limit: int | None = SMALL_BODY) -> dict[str, Any]:
    if not plain_encoding(request):
        raise WriteUnreadable("the body is content-encoded")
    try:
        return read_json(request.body, limit)
    except BodyUnreadable as exc:
        raise WriteUnreadable(str(exc)) from None


def _texts(data: Mapping[str, Any]) -> list[str]:
    return list(body_texts(dict(data)))


def _at(data: Mapping[str, Any], *keys: str) -> object:
    """``data[k1][k2]…``, or None where a level is missing or not an object."""
    value: object = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _full_ref(value: object, what: str) -> RefChange | str:
    """A Data Center ref id (``refs/heads/x``, ``refs/tags/v1``) or a bare branch name: the
    branch name, or the full ref of a tag. Any other ``refs/…`` is not guessed at."""
    if not isinstance(value, str) or not value:
        raise WriteUnreadable(f"{what} is missing or not a string")
    if value.startswith(BRANCH_PREFIX):
        return canonical_branch(value[len(BRANCH_PREFIX):], what)
    if value.startswith(_TAG_PREFIX):
        return RefChange(_TAG_PREFIX + canonical_branch(value[len(_TAG_PREFIX):], what), "", "", "")
    return canonical_branch(value, what)


# -- branches and tags ------------------------------------------------------------------------


def _cloud_branch_create(request: Request, match: Match[Route]) -> Change:
    data = _json(request)
    return branch_created(canonical_branch(data.get("name"), "the name field"), str(_at(data, "target", "hash") or ""))


def _cloud_tag_create(request: Request, match: Match[Route]) -> Change:
    data = _json(request)
    return tag_created(canonical_branch(data.get("name"), "the name field"), str(_at(data, "target", "hash") or ""))


def _url_branch_delete(request: Request, match: Match[Route]) -> Change:
    return branch_deleted(canonical_branch(match.param("name"), "the branch of the URL"))


def _url_tag_delete(request: Request, match: Match[Route]) -> Change:
    return tag_deleted(canonical_branch(match.param("name"), "the tag of the URL"))


def _server_branch_create(request: Request, match: Match[Route]) -> Change:
    data = _json(request)
    name = _full_ref(data.get("name"), "the name field")
    if not isinstance(name, str):
        raise WriteUnreadable("the name field names a tag where a branch is created")
    return branch_created(name, str(data.get("startPoint") or ""))


def _branch_utils(request: Request, match: Match[Route]) -> Change:
    """``branch-utils``: POST creates ``name`` at ``startPoint``; DELETE deletes ``name``."""
    if request.method == "POST":
        return _server_branch_create(request, match)
    if request.method != "DELETE":
        raise WriteUnreadable(f"{request.method} on branch-utils is not a branch write gitvow reads")
    try:
        name = _full_ref(_json(request).get("name"), "the name field")
        if not isinstance(name, str):
            raise WriteUnreadable("the name field names a tag where a branch is deleted")
    except WriteUnreadable as exc:  # still a deletion: ref.delete applies, whichever branch it is
        return unestablished(str(exc), (RefChange("", "", "", DELETED),))
    return branch_deleted(name)


def _server_tag_create(request: Request, match: Match[Route]) -> Change:
    data = _json(request)
    name = _full_ref(data.get("name"), "the name field")
    tag = name.ref[len(_TAG_PREFIX):] if isinstance(name, RefChange) else name
    return tag_created(tag, str(data.get("startPoint") or ""))


# -- commits ----------------------------------------------------------------------------------


def _file_path(name: str) -> str:
    return canonical_path(name[1:] if name.startswith("/") else name, "a file field's name")


def _src(request: Request, match: Match[Route]) -> Change:
    """``POST …/src``: a commit of the form's files on ``branch`` (the main branch without one)."""
    fields = query_fields(request.query) + form_fields(request)
    meta: dict[str, str] = {}
    deleted: list[str] = []
    uploads: dict[str, bytes] = {}
    for name, value in fields:
        if name in _SRC_META:
            text = value.decode("utf-8", "surrogateescape")
            if name == "files":
                deleted.append(_file_path(text))
            elif name in meta:
                raise WriteUnreadable(f"the {name} field is given twice")
            else:
                meta[name] = text
            continue
        path = _file_path(name)
        if path in uploads:
            raise WriteUnreadable("a file is given twice")
        uploads[path] = value
    if not uploads and not deleted:
        raise WriteUnreadable("the commit names no file")
    files = [FileWrite(path, content) for path, content in uploads.items()]
    files += [FileWrite(path, deleted=True) for path in dict.fromkeys(deleted) if path not in uploads]
    branch = meta.get("branch")
    texts = [*meta.values(), *uploads, *deleted]
    change = file_change(canonical_branch(branch, "the branch field") if branch else None, files, texts=texts)
    return replace(change, default_branch_at=CLOUD_REPOSITORY_AT)


def _browse(request: Request, match: Match[Route]) -> Change:
    """Data Center ``PUT …/browse/{path}``: ``content`` written to the path on ``branch``
    (created from ``sourceBranch`` when that differs)."""
    if request.query:
        raise WriteUnreadable("a query string on a commit, which the server may read as well as the form")
    path = canonical_path(match.param("path"), "the file path of the URL")
    meta: dict[str, bytes] = {}
    for name, value in form_fields(request):
        if name in meta:
            raise WriteUnreadable(f"the {name} field is given twice")
        meta[name] = value
    if "content" not in meta or "branch" not in meta:
        raise WriteUnreadable("the commit has no content or no branch field")
    branch = canonical_branch(meta["branch"].decode("utf-8", "surrogateescape"), "the branch field")
    source = meta.get("sourceBranch", b"").decode("utf-8", "surrogateescape")
    kind = CREATED if source and source not in (branch, BRANCH_PREFIX + branch) else FAST_FORWARD
    texts = [value.decode("utf-8", "surrogateescape") for name, value in meta.items() if name != "content"]
    return file_change(branch, [FileWrite(path, meta["content"])], kind=kind, base=source, texts=texts)


# -- pull requests ----------------------------------------------------------------------------


def _cloud_pr_create(request: Request, match: Match[Route]) -> Change | None:
    data = _json(request)
    if data.get("source") is None:
        return None  # required: Bitbucket opens nothing without it
    source = canonical_branch(_at(data, "source", "branch", "name"), "source.branch.name")
    if _at(data, "destination") is not None:
        canonical_branch(_at(data, "destination", "branch", "name"), "destination.branch.name")
    return Change(heads=(source,))


def _cloud_pr_update(request: Request, match: Match[Route]) -> Change | None:
    """A ``destination`` retargets the pull request: a write to the new base."""
    data = _json(request)
    if "destination" not in data:
        return None
    base = canonical_branch(_at(data, "destination", "branch", "name"), "destination.branch.name")
    return Change(refs=(RefChange(BRANCH_PREFIX + base, "", "", FAST_FORWARD),), default_branch_at=CLOUD_REPOSITORY_AT)


def _server_pr_create(request: Request, match: Match[Route]) -> Change | None:
    data = _json(request)
    if data.get("fromRef") is None:
        return None  # required: Bitbucket opens nothing without it
    head = _full_ref(_at(data, "fromRef", "id"), "fromRef.id")
    if not isinstance(head, str):
        raise WriteUnreadable("fromRef.id names a tag")
    if data.get("toRef") is not None:
        _full_ref(_at(data, "toRef", "id"), "toRef.id")
    return Change(heads=(head,))


def _server_pr_update(request: Request, match: Match[Route]) -> Change | None:
    """A ``toRef`` retargets the pull request: a write to the new base."""
    data = _json(request)
    if "toRef" not in data:
        return None
    base = _full_ref(_at(data, "toRef", "id"), "toRef.id")
    ref = base if isinstance(base, RefChange) else RefChange(BRANCH_PREFIX + base, "", "", "")
    return Change(refs=(replace(ref, kind=FAST_FORWARD),))


def _from_forge(why: str) -> Callable[[Request, Match[Route]], Change]:
    def read(request: Request, match: Match[Route]) -> Change:
        return unestablished(why)
    return read


_Reader = Callable[[Request, Match[Route]], "Change | None"]

CLOUD_READERS: dict[tuple[str, str], _Reader] = {
    ("POST", f"{R}/refs/branches"): _cloud_branch_create,
    ("DELETE", f"{R}/refs/branches/{{name*}}"): _url_branch_delete,
    ("POST", f"{R}/refs/tags"): _cloud_tag_create,
    ("DELETE", f"{R}/refs/tags/{{name*}}"): _url_tag_delete,
    ("POST", f"{R}/src"): _src,
    ("POST", f"{R}/pullrequests"): _cloud_pr_create,
    ("PUT", PR): _cloud_pr_update,
}

_SYNC = _from_forge("fork syncing moves the refs the upstream repository holds")
SERVER_READERS: dict[tuple[str, str], _Reader] = {
    ("POST", f"/api/latest{P}/branches"): _server_branch_create,
    ("*", f"/branch-utils/latest{P}/branches"): _branch_utils,
    ("POST", f"/git/latest{P}/tags"): _server_tag_create,
    ("DELETE", f"/git/latest{P}/tags/{{name*}}"): _url_tag_delete,
    ("PUT", f"/api/latest{P}/browse/{{path*}}"): _browse,
    ("POST", f"{DPR}/comments/{{commentId}}/apply-suggestion"): _from_forge(
        "the suggestion it applies is a comment's, held by the forge"),
    ("*", f"/sync/latest{P}"): _SYNC,
    ("*", f"/sync/latest{P}/**"): _SYNC,
    ("POST", f"/api/latest{P}/pull-requests"): _server_pr_create,
    ("PUT", DPR): _server_pr_update,
}


def api_change(request: Request, match: Match[Route], *, cloud: bool) -> Change | None:
    """The change of a write on ``match``, or None when the route changes no ref or file."""
    readers = CLOUD_READERS if cloud else SERVER_READERS
    reader = readers.get((request.method, match.template)) or readers.get(("*", match.template))
    if reader is None:
        return None
    try:
        change = reader(request, match)
    except WriteUnreadable as exc:
        change = unestablished(str(exc))
    if change is not None and cloud and change.refs and not change.default_branch_at:
        change = replace(change, default_branch_at=CLOUD_REPOSITORY_AT)
    return change


__all__ = ["CLOUD_READERS", "CLOUD_REPOSITORY_AT", "FORM_LIMIT", "SERVER_READERS", "api_change"]
