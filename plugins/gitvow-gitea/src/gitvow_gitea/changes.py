"""What a Gitea or Forgejo API write changes: the :class:`~gitvow.change.Change` of the contents,
diffpatch and branches endpoints, read from the JSON body the way Go's ``encoding/json`` reads it.

* ``POST|PUT|DELETE /repos/{o}/{r}/contents/{filepath}``: one file (create, update — with a
  ``from_path`` it is a move —, delete); ``POST /repos/{o}/{r}/contents``: ``files[]``, each
  with ``operation`` (``create``, ``update``, ``delete``), ``path``, ``from_path``, ``content``.
  Contents are base64, decoded strictly. The branch moved is ``new_branch`` (created from
  ``branch``) when given, else ``branch``, else the repository's default branch.
* ``POST /repos/{o}/{r}/diffpatch``: the paths the patch touches as git itself reads them
  (:mod:`gitvow_gitea.patch`: ``git apply --numstat``, forward and reversed, so ``---``/``+++``
  sections, renames, copies and quoted names count too); the patch text is scanned and
  counted. A patch git cannot read is unestablished.
* ``POST /repos/{o}/{r}/branches``: ``new_branch_name`` created; ``DELETE …/branches/{b}``:
  deleted (``ref.delete``); ``PATCH …/branches/{b}`` renames it: the old name deleted
  (``ref.delete``) and the new one created.
* ``POST /repos/{o}/{r}/pulls`` names ``head`` (``owner:branch`` for a fork's) as the agent's
  branch (allowed patterns); ``PATCH …/pulls/{index}`` with a ``base`` retargets the pull
  request: a write to the new base, judged by ``[branches]`` (an approval was given for the
  base it had).
* ``POST /repos/{o}/{r}/merge-upstream`` brings a fork's branch up to its upstream: what it
  changes is the forge's to say, so it is unestablished (refused).
* ``POST /repos/{o}/{r}/tags``: ``tag_name`` created (judged by ``[branches]`` by its full ref,
  ``refs/tags/v1``); ``DELETE …/tags/{t}``: deleted (``ref.delete``).

Go matches JSON keys to fields case-insensitively and keeps the last of several that match:
two keys that fold to one name (``branch`` and ``Branch``) are refused rather than guessed.
A form or multipart body (which Gitea binds differently) is unestablished too.
"""

from __future__ import annotations

import json
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
from gitvow.change import CREATED, DELETED, FAST_FORWARD, Change, RefChange
from gitvow.comments import plain_encoding
from gitvow.request import Request
from gitvow.routing import Match
from gitvow_gitea.patch import patch_paths
from gitvow_gitea.routes import R, Route

#: Bodies over this are not read: the write is unestablished (refused).
BODY_LIMIT = 64 * 1024 * 1024
_FILES_LIMIT = 10_000
_OPERATIONS = frozenset({"create", "update", "delete"})


def json_body(request: Request) -> dict[str, object]:
    """The body's top-level object with its keys folded to lower case (Go's matching), or
    :class:`WriteUnreadable`."""
    content_type = request.header("content-type").split(";", 1)[0].strip().lower()
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        raise WriteUnreadable("a form body, which Gitea binds by other rules than JSON")
    if len(request.body) > BODY_LIMIT or not plain_encoding(request):
        raise WriteUnreadable("the body is over the read limit or content-encoded")
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise WriteUnreadable("the body is not JSON") from None
    return _folded(data, "the body")


def _folded(data: object, what: str) -> dict[str, object]:
    if not isinstance(data, dict):
        raise WriteUnreadable(f"{what} is not a JSON object")
    folded: dict[str, object] = {}
    for key, value in data.items():
        name = str(key).lower()
        if name in folded:
            raise WriteUnreadable(f"{what} names one field twice (Go matches field names case-insensitively)")
        folded[name] = value
    return folded


def _optional_branch(body: Mapping[str, object], name: str) -> str | None:
    value = body.get(name)
    return None if value in (None, "") else canonical_branch(value, f"the {name} field")


def _target(body: Mapping[str, object]) -> tuple[str | None, str, str]:
    """(the branch moved — None for the default branch —, its kind, where a new branch starts)."""
    base = _optional_branch(body, "branch")
    new = _optional_branch(body, "new_branch")
    if new is not None:
        return new, CREATED, base or ""
    return base, FAST_FORWARD, ""


def _one_file(operation: str, path: str, body: Mapping[str, object], what: str) -> FileWrite:
    if operation not in _OPERATIONS:
        raise WriteUnreadable(f"{what} has an operation other than create, update, delete")
    path = canonical_path(path, f"the path of {what}")
    if operation == "delete":
        return FileWrite(path, deleted=True)
    previous = body.get("from_path")
    moved = canonical_path(previous, f"the from_path of {what}") if previous not in (None, "") else None
    if moved == path:
        moved = None
    return FileWrite(path, decode_content(body.get("content"), "base64", what), moved)


def _write(request: Request, files: list[FileWrite], body: Mapping[str, object]) -> Change:
    branch, kind, base = _target(body)
    return file_change(branch, files, kind=kind, base=base, texts=_texts(body))


def _texts(body: Mapping[str, object]) -> Iterator[str]:
    """Every string of the body but the file contents (scanned decoded, with their path)."""
    return body_texts(dict(body), skip=_CONTENT_KEYS)


_CONTENT_KEYS = frozenset({"content"})


def _contents_file(request: Request, match: Match[Route]) -> Change:
    body = json_body(request)
    operation = {"POST": "create", "PUT": "update", "DELETE": "delete"}[request.method]
    path = match.param("filepath") or ""
    return _write(request, [_one_file(operation, path, body, "the file")], body)


def _contents_files(request: Request, match: Match[Route]) -> Change:
    body = json_body(request)
    entries = body.get("files")
    if not isinstance(entries, list) or not entries or len(entries) > _FILES_LIMIT:
        raise WriteUnreadable("files is not a list of 1 to 10000 entries")
    files = []
    for number, entry in enumerate(entries):
        item = _folded(entry, f"files[{number}]")
        files.append(_one_file(str(item.get("operation")), str(item.get("path") or ""), item, f"files[{number}]"))
    return _write(request, files, body)


def _diffpatch(request: Request, match: Match[Route]) -> Change:
    body = json_body(request)
    content = body.get("content")
    if not isinstance(content, str):
        raise WriteUnreadable("the content field (the patch) is missing or not a string")
    patch = content.encode("utf-8", "surrogatepass")
    files = patch_paths(patch)
    branch, kind, base = _target(body)
    change = file_change(branch, files, kind=kind, base=base, texts=[*_texts(body), content])
    # the patch is what the write adds: counted for [size] as one object
    return Change(refs=change.refs, paths=change.paths, added_bytes=len(patch), largest=len(patch),
                  secrets=change.secrets, diffs=(("(the patch)", content[:64 * 1024]),))


def _branch_create(request: Request, match: Match[Route]) -> Change:
    body = json_body(request)
    base = body.get("old_ref_name") or body.get("old_branch_name") or ""
    return branch_created(canonical_branch(body.get("new_branch_name"), "the new_branch_name field"), str(base))


def _branch_delete(request: Request, match: Match[Route]) -> Change:
    return branch_deleted(canonical_branch(match.param("branch"), "the branch of the URL"))


def _branch_rename(request: Request, match: Match[Route]) -> Change:
    old = canonical_branch(match.param("branch"), "the branch of the URL")
    new = canonical_branch(json_body(request).get("name"), "the name field")
    return Change(refs=(RefChange(f"refs/heads/{old}", "", "", DELETED), RefChange(f"refs/heads/{new}", "", "", CREATED)))


def _tag_create(request: Request, match: Match[Route]) -> Change:
    body = json_body(request)
    return tag_created(canonical_branch(body.get("tag_name"), "the tag_name field"), str(body.get("target") or ""))


def _tag_delete(request: Request, match: Match[Route]) -> Change:
    return tag_deleted(canonical_branch(match.param("tag"), "the tag of the URL"))


def _pull_create(request: Request, match: Match[Route]) -> Change | None:
    body = json_body(request)
    head = body.get("head")
    if head in (None, ""):
        return None  # required: Gitea opens nothing without it
    if not isinstance(head, str):
        raise WriteUnreadable("the head field is not a string")
    if body.get("base") not in (None, ""):
        canonical_branch(body.get("base"), "the base field")
    return Change(heads=(canonical_branch(head.rpartition(":")[2], "the head field"),))


def _pull_edit(request: Request, match: Match[Route]) -> Change | None:
    """A ``base`` retargets the pull request: a write to the new base."""
    base = json_body(request).get("base")
    if base in (None, ""):
        return None  # Gitea leaves the base alone
    return Change(refs=(RefChange("refs/heads/" + canonical_branch(base, "the base field"), "", "", FAST_FORWARD),))


_READERS: dict[tuple[str, str], Callable[[Request, Match[Route]], Change | None]] = {
    ("POST", f"{R}/pulls"): _pull_create,
    ("PATCH", f"{R}/pulls/{{index}}"): _pull_edit,
    ("POST", f"{R}/contents/{{filepath*}}"): _contents_file,
    ("PUT", f"{R}/contents/{{filepath*}}"): _contents_file,
    ("DELETE", f"{R}/contents/{{filepath*}}"): _contents_file,
    ("POST", f"{R}/contents"): _contents_files,
    ("POST", f"{R}/diffpatch"): _diffpatch,
    ("POST", f"{R}/branches"): _branch_create,
    ("DELETE", f"{R}/branches/{{branch*}}"): _branch_delete,
    ("PATCH", f"{R}/branches/{{branch*}}"): _branch_rename,
    ("POST", f"{R}/tags"): _tag_create,
    ("POST", f"{R}/merge-upstream"): lambda request, match: unestablished(
        "the commits it brings to the branch are the upstream repository's, held by the forge"),
    ("DELETE", f"{R}/tags/{{tag*}}"): _tag_delete,
}


def api_change(request: Request, match: Match[Route]) -> Change | None:
    """The change of an API write on ``match``, or None when the route changes no branch or file."""
    reader = _READERS.get((request.method, match.template))
    if reader is None:
        return None
    try:
        return reader(request, match)
    except WriteUnreadable as exc:
        return unestablished(str(exc))


__all__ = ["BODY_LIMIT", "api_change", "json_body", "patch_paths"]
