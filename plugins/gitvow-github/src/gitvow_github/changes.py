"""What a GitHub API write changes: the :class:`~gitvow.change.Change` of a REST or GraphQL
write, read where GitHub reads it (:mod:`gitvow.api_change` does the forge-neutral part).

REST (by the route's operationId):

- contents API ``PUT``/``DELETE …/contents/{path}``: the path exactly, the decoded content
  (counted, scanned), the ``branch`` (absent: the repository's default branch, read from the
  forge);
- Git Data: ``POST git/refs`` creates a ref, ``PATCH git/refs/{ref}`` moves it (``force: true``
  is ``ref.force``; without it GitHub refuses a non-fast-forward, but the branch rules still
  judge the branch), ``DELETE git/refs/{ref}`` is ``ref.delete``; ``POST git/blobs`` and
  ``git/trees`` carry content (scanned, counted) and ``git/trees`` names paths (a subtree put in
  place by id is its directory, ``dir/``, which every ``[paths]`` pattern that could name
  something inside it matches: staged for a human rather than guessed); commits and tags
  carry text (scanned). A branch is written only by the ref update, so branch rules apply there;
- ``POST …/merges`` and ``merge-upstream`` write their base branch; renaming a branch deletes
  the old name (``ref.delete``) and creates the new one;
- pull requests: ``POST …/pulls`` names its ``head`` as the agent's branch (allowed patterns);
  ``PATCH …/pulls/N`` with a ``base`` retargets it, judged as a write to the new base (an
  approval or an armed auto-merge was given for the base it had). Merging is ``pr.merge``'s
  alone: its mode or relay decides, not the branch rules.

GraphQL: ``createCommitOnBranch`` (paths, decoded contents, the branch), ``createRef``,
``updateRef``, ``updateRefs``, ``deleteRef``, ``createLinkedBranch``, ``mergeBranch``,
``createPullRequest`` (its head) and ``updatePullRequest`` (a new base). A ref named only by
node id (``updateRef``/``deleteRef``'s ``refId``, a branch given by ``id``) cannot be judged by
the branch rules without asking the forge: such a write is unestablished (refused).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from gitvow.api_change import (
    SMALL_BODY,
    BodyUnreadable,
    FileWrite,
    body_texts,
    branch_refs,
    decode_base64,
    merge_changes,
    qualified_refs,
    read_json,
    ref_changes,
    unestablished,
    write_change,
)
from gitvow.change import CREATED, DEFAULT_BRANCH_REF, DELETED, FAST_FORWARD, FORCED, Change, RefChange
from gitvow.graphql import GraphQLOperation
from gitvow.request import ZERO_OID

#: Where the REST API describes the repository, below its root (``{repo}``: see ``Change``).
REPOSITORY_AT = "/repos/{repo}"
#: File contents are read decoded from these keys; their raw (base64) text is not scanned again.
_CONTENT_KEYS = frozenset({"content", "contents"})


def _texts(data: Any) -> Iterable[str]:
    return body_texts(data, skip=_CONTENT_KEYS)


def _string(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


# -- REST ------------------------------------------------------------------------------------


def _contents(data: dict[str, Any], path: str, at: str, *, delete: bool) -> Change:
    branch = data.get("branch")
    if branch is not None and not isinstance(branch, str):
        return unestablished("the branch is not a string")
    refs = ref_changes(branch_refs(branch), FAST_FORWARD) if branch else (RefChange(DEFAULT_BRANCH_REF, "", "", FAST_FORWARD),)
    if delete:
        return write_change(refs, [FileWrite(path, None)], texts=_texts(data), default_branch_at=at)
    content = _string(data, "content")
    decoded = decode_base64(content) if content is not None else None
    if decoded is None:
        return unestablished("the file content is not base64", refs)
    return write_change(refs, [FileWrite(path, decoded)], texts=_texts(data), default_branch_at=at)


def _update_ref(data: dict[str, Any] | None, ref: str, at: str) -> Change:
    """``PATCH git/refs/{ref}``: forced when ``force`` is true, and when the body cannot say
    (an update whose ancestry cannot be established counts as forced, as for a push)."""
    force = data.get("force", False) if data is not None else None
    if not isinstance(force, bool):
        return unestablished("force is not a boolean", ref_changes(_ref_names(ref), FORCED))
    return write_change(ref_changes(_ref_names(ref), FORCED if force else FAST_FORWARD), texts=_texts(data),
                        default_branch_at=at)


def _blob(data: dict[str, Any]) -> Change:
    content = _string(data, "content")
    if content is None:
        return unestablished("the blob has no content")
    encoding = data.get("encoding", "utf-8")
    if encoding == "base64":
        decoded = decode_base64(content)
        if decoded is None:
            return unestablished("the blob content is not base64")
    elif encoding in ("utf-8", "utf8"):
        decoded = content.encode("utf-8", "surrogateescape")
    else:
        return unestablished("the blob's encoding is neither utf-8 nor base64")
    return write_change(contents=[decoded], texts=_texts(data))


def _tree(data: dict[str, Any]) -> Change:
    """A Git Data tree, read as git reads the tree GitHub writes: a mode by its octal value
    (``40000`` and ``040000`` are one tree mode), and what git's fsck refuses (a path given
    twice, a ``.git`` entry in any case, a mode that is not octal) unestablished rather than
    read one way while git reads it another."""
    entries = data.get("tree")
    if not isinstance(entries, list):
        return unestablished("the tree has no entries")
    files: list[FileWrite] = []
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            return unestablished("a tree entry without a path")
        path: str = entry["path"]
        key = path.strip("/")
        if key in seen:
            return unestablished(f"the tree names {path!r} twice")
        seen.add(key)
        if any(part.lower() == ".git" for part in key.split("/")):
            return unestablished("a tree entry is named .git")
        mode = entry.get("mode")
        try:
            octal = int(mode, 8) if isinstance(mode, str) and mode.isdigit() else None
        except ValueError:
            octal = None
        if mode is not None and octal is None:
            return unestablished(f"a tree entry's mode {mode!r} is not octal")
        content = entry.get("content")
        if entry.get("type") == "tree" or octal == 0o40000:
            files.append(FileWrite(path.rstrip("/") + "/", None))
        elif isinstance(content, str):
            files.append(FileWrite(path, content.encode("utf-8", "surrogateescape")))
        else:
            files.append(FileWrite(path, None))
    return write_change((), files, texts=_texts(data))


def _rename(data: dict[str, Any] | None, old: str, at: str) -> Change:
    """Renaming deletes the old name (``ref.delete``, whatever the body says) and creates the new."""
    deleted = ref_changes(branch_refs(old), DELETED)
    new = _string(data, "new_name") if data is not None else None
    if not new or not deleted:
        return unestablished("the branch names are missing", deleted)
    refs = deleted + ref_changes(branch_refs(new), CREATED)
    return write_change(refs, texts=_texts(data), default_branch_at=at)


def _pull(data: dict[str, Any], at: str) -> Change | None:
    """A pull request's head is the agent's branch. Without one GitHub opens nothing."""
    head = _string(data, "head")
    if not head:
        return None
    return write_change(heads=(head.rpartition(":")[2],), texts=_texts(data), default_branch_at=at)


def _named(data: Mapping[str, Any], key: str, kind: str, at: str = "", *, generated: bool = False,
           qualified: bool = False) -> Change | None:
    """A write to the ref ``data[key]`` names: a branch name, or (``qualified``) a full ref.
    Absent, the forge refuses the request (the key is required, or leaves the ref alone), so
    there is no change; unless the forge then ``generated`` a name itself: unestablished."""
    name = data.get(key)
    if name is None and not generated:
        return None
    if not isinstance(name, str) or not name:
        return unestablished(f"{key} is not a branch name")
    names = qualified_refs(name) if qualified else branch_refs(name)
    return write_change(ref_changes(names, kind), texts=_texts(data), default_branch_at=at)


#: Routes whose change is known from the path even when the body cannot be read (a deletion,
#: a rename, a ref update then counted as forced).
_WITHOUT_BODY = frozenset({"git/delete-ref", "git/update-ref", "repos/rename-branch"})

#: Routes whose body carries file content (bounded by the proxy's body limit and ``[size]``).
_CONTENT_ROUTES = frozenset({"repos/create-or-update-file-contents", "repos/delete-file", "git/create-blob",
                             "git/create-tree", "git/create-commit", "git/create-tag"})

_Reader = Callable[[Any, list[str], str], "Change | None"]


#: The change reader of each route that changes refs or content, built once (every REST
#: write asks; the lambdas look their helpers up when called).
_READERS: dict[str, _Reader] = {
    "repos/create-or-update-file-contents": lambda d, s, at: _contents(d, "/".join(s[4:]), at, delete=False),
    "repos/delete-file": lambda d, s, at: _contents(d, "/".join(s[4:]), at, delete=True),
    "git/create-ref": lambda d, s, at: _named(d, "ref", CREATED, at, qualified=True),
    "git/update-ref": lambda d, s, at: _update_ref(d, "/".join(s[5:]), at),
    "git/delete-ref": lambda d, s, at: write_change(
        ref_changes(_ref_names("/".join(s[5:])), DELETED), texts=_texts(d), default_branch_at=at),
    "git/create-blob": lambda d, s, at: _blob(d),
    "git/create-tree": lambda d, s, at: _tree(d),
    "git/create-commit": lambda d, s, at: write_change(texts=_texts(d)),
    "git/create-tag": lambda d, s, at: write_change(texts=_texts(d)),
    "repos/merge": lambda d, s, at: _named(d, "base", FAST_FORWARD, at),
    "repos/merge-upstream": lambda d, s, at: _named(d, "branch", FAST_FORWARD, at),
    "repos/rename-branch": lambda d, s, at: _rename(d, "/".join(s[4:-1]), at),
    "pulls/create": lambda d, s, at: _pull(d, at),
    "pulls/update": lambda d, s, at: _named(d, "base", FAST_FORWARD, at),
}


def _rest_reader(operation_id: str) -> _Reader | None:
    return _READERS.get(operation_id)


def changes_content(operation_id: str) -> bool:
    """Whether the REST route ``operation_id`` changes refs or content (its body is read for a
    :class:`~gitvow.change.Change`)."""
    return operation_id in _READERS


def _ref_names(ref: str) -> tuple[str, ...]:
    """A ``{ref}`` path parameter (``heads/x``; a full ``refs/heads/x`` may be read either way)."""
    return qualified_refs(ref) + (("refs/" + ref,) if ref.startswith("refs/") else ())


def rest_change(operation_id: str, path: str, body: bytes, api_root: str, query: str = "") -> Change | None:
    """The change of a REST write whose route is ``operation_id``; ``path`` is below the API
    root (``/repos/o/r/contents/a.txt``), ``api_root`` the root's own path (``""`` on
    api.github.com, ``/api/v3`` on GHES). None for a route that changes no ref or content.

    A query string on such a write is unestablished: GitHub (Rails) merges query parameters
    with the body's, so ``?branch=main`` could name another branch than the body was read for."""
    reader = _rest_reader(operation_id)
    if reader is None:
        return None
    if query:
        found = _read(reader, operation_id, path, body, api_root)
        refs = found.refs if found is not None else ()
        return unestablished("a query string on a write GitHub may read it from as well as the body", refs)
    return _read(reader, operation_id, path, body, api_root)


def _read(reader: _Reader, operation_id: str, path: str, body: bytes, api_root: str) -> Change | None:
    segments = [unquote(part) for part in path.strip("/").split("/")]
    at = api_root + REPOSITORY_AT
    try:
        data: dict[str, Any] | None = read_json(body, None if operation_id in _CONTENT_ROUTES else SMALL_BODY)
    except BodyUnreadable as exc:
        if operation_id not in _WITHOUT_BODY:
            return unestablished(str(exc))
        data = None
    return reader(data, segments, at)


# -- GraphQL ---------------------------------------------------------------------------------


def _oid_kind(update: Mapping[str, Any]) -> str:
    after, before = update.get("afterOid"), update.get("beforeOid")
    if after == ZERO_OID:
        return DELETED
    if before == ZERO_OID:
        return CREATED
    return FORCED if update.get("force") is True else FAST_FORWARD


def _commit_on_branch(data: Mapping[str, Any]) -> Change:
    branch = data.get("branch")
    if not isinstance(branch, dict):
        return unestablished("createCommitOnBranch names no branch")
    name = branch.get("branchName")
    if branch.get("id") is not None:  # beside a name, GitHub could take either: neither is guessed
        return unestablished("the branch is named by node id (name it by repositoryNameWithOwner and branchName only)")
    if not isinstance(name, str) or not name:
        return unestablished("the branch is named by node id only (name it by repositoryNameWithOwner and branchName)")
    refs = ref_changes(branch_refs(name), FAST_FORWARD)
    changes = data.get("fileChanges") or {}
    if not isinstance(changes, dict):
        return unestablished("fileChanges is not an object", refs)
    files: list[FileWrite] = []
    for addition in changes.get("additions") or []:
        contents = addition.get("contents") if isinstance(addition, dict) else None
        decoded = decode_base64(contents) if isinstance(contents, str) else None
        if decoded is None or not isinstance(addition.get("path"), str):
            return unestablished("an addition without a path or base64 contents", refs)
        files.append(FileWrite(addition["path"], decoded))
    for deletion in changes.get("deletions") or []:
        if not isinstance(deletion, dict) or not isinstance(deletion.get("path"), str):
            return unestablished("a deletion without a path", refs)
        files.append(FileWrite(deletion["path"], None))
    return write_change(refs, files, texts=_texts(data))


def _by_id(kind: str, what: str) -> Change:
    return unestablished(f"{what} names the ref by node id only", (RefChange("", "", "", kind),))


def _update_refs(data: Mapping[str, Any]) -> Change:
    updates = data.get("refUpdates")
    if not isinstance(updates, list) or not updates:
        return unestablished("updateRefs lists no ref update")
    refs: list[RefChange] = []
    for update in updates:
        if not isinstance(update, dict) or not isinstance(update.get("name"), str):
            return unestablished("a ref update without a name")
        refs.extend(ref_changes(qualified_refs(update["name"]), _oid_kind(update)))
    return write_change(refs, texts=_texts(data))


def _graphql_reader(name: str) -> Callable[[Mapping[str, Any]], Change | None] | None:
    readers: dict[str, Callable[[Mapping[str, Any]], Change | None]] = {
        "createCommitOnBranch": _commit_on_branch,
        "createRef": lambda d: _named(d, "name", CREATED, qualified=True),
        "updateRef": lambda d: _by_id(FORCED if d.get("force") is True else FAST_FORWARD, "updateRef"),
        "deleteRef": lambda d: _by_id(DELETED, "deleteRef"),
        "updateRefs": _update_refs,
        "createLinkedBranch": lambda d: _named(d, "name", CREATED, generated=True),
        "mergeBranch": lambda d: _named(d, "base", FAST_FORWARD),
        "createPullRequest": lambda d: _graphql_head(d),
        "updatePullRequest": lambda d: _named(d, "baseRefName", FAST_FORWARD),
    }
    return readers.get(name)


def _graphql_head(data: Mapping[str, Any]) -> Change | None:
    head = data.get("headRefName")
    if not isinstance(head, str) or not head:
        return None  # required by the schema: GitHub opens nothing without it
    return write_change(heads=(head.rpartition(":")[2],), texts=_texts(data))


def graphql_change(operation: GraphQLOperation, variables: Mapping[str, Any]) -> Change | None:
    """The change of a GraphQL mutation's fields that write refs or content, together; None
    when none does. Its ``default_branch_at`` is below the REST root (the adapter prefixes the
    host's root: a classification is cached by body, whatever host it came to)."""
    found: list[Change] = []
    for field in operation.fields:
        reader = _graphql_reader(field.name)
        if reader is None:
            continue
        try:
            data = field.argument("input", variables)
        except Exception:  # a literal the reader cannot take: nothing of it can be established
            data = None
        change = reader(data) if isinstance(data, dict) else unestablished(f"{field.name}'s input is unreadable")
        if change is not None:
            found.append(change)
    if not found:
        return None
    return merge_changes(found, default_branch_at=REPOSITORY_AT)


__all__ = ["graphql_change", "rest_change"]
