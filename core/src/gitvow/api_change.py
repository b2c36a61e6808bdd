"""A write through a forge's API carries a :class:`~gitvow.change.Change`, read from its body.

A push's change is read from its pack (gitvow-gitsmart). The forges also take changes without
git: GitLab's commits, files and branches APIs, Gitea's and Forgejo's contents and branches
APIs, GitHub's contents API. Their adapters read each file the body writes (its path, its
new content, a move's old path) and the branch it moves, and hand them here, so one builder
makes the change the ``change`` stage judges, exactly as it judges a push:

* **Paths are canonical or refused.** A path a forge would clean into another one
  (``a/../b``, ``./a``, ``a//b``, a leading ``/``, a backslash, which Gitea turns into ``/``)
  is not guessed at: :class:`WriteUnreadable`, and the adapter's change is unestablished.
* **Contents are decoded the way the forge decodes them** (``text``, or strict base64), then
  counted for ``[size]`` and scanned for credentials (:mod:`gitvow.secrets`) together with the
  rest of the body (a commit message can carry a key too).
* **A branch the body does not name is the repository's default branch**: the ref
  :data:`DEFAULT_BRANCH_REF` (``HEAD``), which the ``change`` stage replaces by the default
  branch the enforcement point reads from the forge, and refuses when it cannot.
* **Branch names are checked as git checks them** (``git check-ref-format``): a name the forge
  could read as another ref (``refs/heads/main``, ``HEAD``, ``a..b``) is refused.

Nothing here quotes the body: the reasons of :class:`WriteUnreadable` are shown to the agent.

JSON bodies that move any number of refs (GitHub's contents, Git Data and GraphQL writes) are
read with :func:`read_json`, :func:`branch_refs`/:func:`qualified_refs` (every ref a spelling
may name, so none slips past a branch rule), :func:`body_texts` (every string decoded, so a
key behind a JSON escape is scanned as stored) and :func:`write_change`/:func:`merge_changes`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gitvow.change import (
    BRANCH_PREFIX,
    CREATED,
    DEFAULT_BRANCH_REF,
    DELETED,
    FAST_FORWARD,
    Change,
    RefChange,
    SecretFinding,
)
from gitvow.secrets import scan, scan_text

#: How much of each written file, and of all of them, is kept for the human asked to approve.
SHOWN_PER_FILE = 64 * 1024
SHOWN_TOTAL = 256 * 1024

_BAD_REF = re.compile(r"(^|/)\.|\.\.|@\{|[\x00-\x20\x7f~^:?*\[\\]|//|\.lock(/|$)|/$|\.$")


class WriteUnreadable(ValueError):
    """What an adapter could not read of a write; the message names what, never the body's text."""


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One file a write touches: its path, its new content (None: deleted, or kept as it was by a
    move or a mode change) and, for a move, the path it leaves."""

    path: str
    content: bytes | None = None
    previous: str | None = None
    deleted: bool = False


def canonical_path(value: object, what: str = "a file path") -> str:
    """``value`` as the repository path the forge writes, or :class:`WriteUnreadable` when the forge
    could clean it into another path than the one read (or it is not a path at all)."""
    if not isinstance(value, str) or not value:
        raise WriteUnreadable(f"{what} is missing or not a string")
    if "\\" in value or "\x00" in value or any(ord(c) < 0x20 for c in value):
        raise WriteUnreadable(f"{what} has a backslash or a control character, which a forge may rewrite")
    segments = value.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise WriteUnreadable(f"{what} is not canonical (an empty, '.' or '..' segment, or a leading or trailing '/')")
    return value


def canonical_branch(value: object, what: str = "the branch") -> str:
    """A branch name as ``git check-ref-format --branch`` accepts it and no forge reads as another
    ref: not ``HEAD``, not spelled as a full ref (``refs/…``), no ``..``, ``@{``, control
    characters, ``~^:?*[\\``, ``//``, leading ``.`` or ``-`` of a segment, trailing ``/``, ``.`` or ``.lock``."""
    if not isinstance(value, str) or not value:
        raise WriteUnreadable(f"{what} is missing or not a string")
    if value in ("HEAD", "@") or value.startswith(("refs/", "-")) or _BAD_REF.search(value):
        raise WriteUnreadable(f"{what} is not a branch name git accepts as one, or a forge could read it as another ref")
    return value


def decode_content(value: object, encoding: object, what: str) -> bytes:
    """The bytes a forge writes for ``value``: ``text`` (UTF-8) or ``base64`` (strict; line
    breaks ignored, as Go's and Ruby's decoders ignore them). Anything else is unreadable."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise WriteUnreadable(f"the content of {what} is not a string")
    name = "text" if encoding is None else encoding
    if name == "text":
        return value.encode("utf-8", "surrogatepass")
    if name != "base64":
        raise WriteUnreadable(f"the content encoding of {what} is neither text nor base64")
    try:
        return base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        raise WriteUnreadable(f"the base64 content of {what} does not decode") from None


def branch_ref(branch: str | None) -> str:
    """The full ref a write names: ``refs/heads/<branch>``, or :data:`DEFAULT_BRANCH_REF`."""
    return DEFAULT_BRANCH_REF if branch is None else BRANCH_PREFIX + branch


def file_change(branch: str | None, files: Sequence[FileWrite], *, kind: str = FAST_FORWARD,
                body: bytes = b"", base: str = "", texts: Iterable[str] = ()) -> Change:
    """The change of a contents or commits write: the branch it moves (``kind``: ``created`` for
    a write that starts a new branch, ``forced`` for one that overwrites it), every path it
    touches (a move's two), the bytes it adds, and the credentials in its contents, in ``body``
    and in ``texts`` (the body's other strings, decoded: :func:`body_texts`), each finding once,
    named by the first file it is in. ``base`` is where a new branch starts."""
    paths: dict[str, None] = {}
    findings: dict[tuple[str, str], SecretFinding] = {}
    sizes: list[int] = []
    for write in files:
        if write.previous is not None:
            paths.setdefault(write.previous)
        paths.setdefault(write.path)
        if write.content is not None:
            sizes.append(len(write.content))
            for found in scan(write.content, write.path):
                findings.setdefault((found.kind, found.fingerprint), found)
    if body:
        for found in scan(body):
            findings.setdefault((found.kind, found.fingerprint), found)
    for text in texts:
        for found in scan_text(text):
            findings.setdefault((found.kind, found.fingerprint), found)
    ref = RefChange(branch_ref(branch), base, "", kind)
    return Change(refs=(ref,), paths=tuple(paths), added_bytes=sum(sizes), largest=max(sizes, default=0),
                  secrets=tuple(findings.values()), diffs=_shown(files, {f.path for f in findings.values()}))


def _shown(files: Sequence[FileWrite], with_secrets: set[str]) -> tuple[tuple[str, str], ...]:
    """Each file as the write leaves it, for the human asked to approve (bounded). A file that
    holds a credential is never shown, not even to the human: secrets go nowhere."""
    shown: list[tuple[str, str]] = []
    budget = SHOWN_TOTAL
    for write in files:
        if write.path in with_secrets:
            text = "(holds a credential of a known format: not shown)"
        elif write.deleted:
            text = "(deleted)"
        elif write.content is None:
            text = f"(moved from {write.previous})" if write.previous else "(content unchanged)"
        elif b"\0" in write.content[:8000]:
            text = f"(binary, {len(write.content)} bytes)"
        else:
            cut = min(SHOWN_PER_FILE, max(budget, 0))
            text = write.content[:cut].decode("utf-8", "replace")
            if len(write.content) > cut:
                text += f"\n… ({len(write.content) - cut} more bytes not shown)"
            budget -= cut
        if write.previous is not None and write.content is not None:
            text = f"(moved from {write.previous})\n{text}"
        shown.append((write.path, text))
    return tuple(shown)


def branch_created(branch: str, base: str = "") -> Change:
    """A branch created through the API (``base``: the ref or commit it starts at, as sent)."""
    return Change(refs=(RefChange(BRANCH_PREFIX + branch, "", base, CREATED),))


def branch_deleted(branch: str) -> Change:
    """A branch deleted through the API: ``ref.delete``, refused unless the policy allows it."""
    return Change(refs=(RefChange(BRANCH_PREFIX + branch, "", "", DELETED),))


def branch_argument(branch: object) -> Change:
    """The branch an MCP tool's ``create_branch`` call names, as the proxy judges the request
    the server then sends: a name, or a write whose branch cannot be established."""
    if not isinstance(branch, str) or not branch.strip():
        return unestablished("the branch is not a branch name")
    return branch_created(branch.strip())


TAG_PREFIX = "refs/tags/"


def tag_created(tag: str, target: str = "") -> Change:
    """A tag created through the API: judged by ``[branches]`` by its full ref (``refs/tags/v1``)."""
    return Change(refs=(RefChange(TAG_PREFIX + tag, "", target, CREATED),))


def tag_deleted(tag: str) -> Change:
    """A tag deleted through the API: ``ref.delete``, as a deletion pushed with git."""
    return Change(refs=(RefChange(TAG_PREFIX + tag, "", "", DELETED),))


def unestablished(reason: str, refs: Sequence[RefChange] = ()) -> Change:
    """A write whose change could not be read: the ``change`` stage refuses it with ``reason``
    (``refs``: the ref updates it was seen to make, so ``ref.force``/``ref.delete`` still apply)."""
    return Change(refs=tuple(refs), unestablished=reason)


# -- reading a JSON write body (GitHub's contents, Git Data and GraphQL writes) ---------------

#: The longest body of a write that carries no file content (a ref update, a merge) read.
SMALL_BODY = 64 * 1024
#: Most strings of one body scanned apart from file contents (a body is bounded by the proxy).
TEXT_LIMIT = 100_000


class BodyUnreadable(ValueError):
    """The body is not what the forge's API reads (not JSON, not an object, over the limit)."""


class _TwiceGiven(Exception):
    pass


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _TwiceGiven
    return found


def read_json(body: bytes, limit: int | None = None) -> dict[str, object]:
    """A JSON object body (at most ``limit`` bytes), or :class:`BodyUnreadable`: also when an
    object gives a key twice (``{"branch": "agent/x", "branch": "main"}``), which parsers
    resolve differently, so the branch judged could be another than the one written."""
    if limit is not None and len(body) > limit:
        raise BodyUnreadable(f"the body is over {limit} bytes")
    try:
        data = json.loads(body, object_pairs_hook=_unique) if body.strip() else {}
    except _TwiceGiven:
        raise BodyUnreadable("a key is given twice (parsers differ on which one counts)") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BodyUnreadable("the body is not JSON") from None
    if not isinstance(data, dict):
        raise BodyUnreadable("the body is not a JSON object")
    return data


def branch_refs(name: str) -> tuple[str, ...]:
    """The full refs a branch argument may name, for a forge that takes more than the strict
    branch names of :func:`canonical_branch` (GitHub's ``branch``, ``branchName``, ``base``):
    ``x`` → ``refs/heads/x``; ``refs/…`` as it is and as a branch literally called so;
    ``heads/x`` also as ``refs/heads/x``. Every spelling the forge could read is judged, so
    none slips past a branch rule. Empty for an empty name."""
    name = name.strip()
    if not name:
        return ()
    found = [name if name.startswith("refs/") else BRANCH_PREFIX + name]
    if name.startswith("refs/"):
        found.append(BRANCH_PREFIX + name)
    if name.startswith("heads/"):
        found.append("refs/" + name)
    return tuple(dict.fromkeys(found))


def qualified_refs(name: str) -> tuple[str, ...]:
    """The full ref an argument that names one below ``refs/`` means (``refs/heads/x``, or
    ``heads/x`` as GitHub's ``git/refs/{ref}`` writes it); a bare name is taken as a branch."""
    name = name.strip()
    if not name:
        return ()
    if name.startswith("refs/"):
        return (name,)
    return ("refs/" + name,) if "/" in name else (BRANCH_PREFIX + name,)


def ref_changes(names: Iterable[str], kind: str, *, old: str = "", new: str = "") -> tuple[RefChange, ...]:
    """One :class:`RefChange` of ``kind`` for each full ref ``names`` lists (deduplicated)."""
    return tuple(RefChange(ref, old, new, kind) for ref in dict.fromkeys(names))


def decode_base64(text: str) -> bytes | None:
    """:func:`decode_content` of base64, or None when it does not decode."""
    try:
        return decode_content(text, "base64", "a file")
    except WriteUnreadable:
        return None


def body_texts(value: object, *, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string of a decoded JSON value, keys included, depth first, so a credential behind a
    JSON escape (``\\u0041KIA…``) is scanned as the forge stores it; the values of keys in
    ``skip`` (file contents, scanned as decoded bytes instead) are left out."""
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield str(key)
                if key not in skip:
                    todo.append(child)
        elif isinstance(item, list):
            todo.extend(item)


def write_change(
    refs: Sequence[RefChange] = (),
    files: Sequence[FileWrite] = (),
    *,
    contents: Sequence[bytes] = (),
    texts: Iterable[str] = (),
    heads: Sequence[str] = (),
    unestablished: str = "",
    default_branch_at: str = "",
) -> Change:
    """The change of an API write that moves ``refs`` (any number, any kind) and touches
    ``files``: each path canonical (:func:`canonical_path`; one that is not makes the change
    unestablished; a path ending in ``/`` is a directory whose content changes in ways the
    write does not list, a subtree put in place by id), contents counted and scanned, as are
    ``contents`` (new content at no path the write names: a git blob) and ``texts`` (the
    body's other strings: a commit message, an author). ``heads`` are branches named as the
    agent's own (a pull request's head)."""
    paths: dict[str, None] = {}
    findings: dict[tuple[str, str], SecretFinding] = {}
    sizes = [len(content) for content in contents]
    problems = [unestablished] if unestablished else []
    shown: list[FileWrite] = []
    for content in contents:
        for found in scan(content):
            findings.setdefault((found.kind, found.fingerprint), found)
    for write in files:
        directory = write.path.endswith("/") and len(write.path) > 1
        try:
            path = canonical_path(write.path[:-1] if directory else write.path)
        except WriteUnreadable as exc:
            problems.append(str(exc))
            continue
        paths.setdefault(path + "/" if directory else path)
        if write.content is None:
            continue
        shown.append(FileWrite(path, write.content))
        sizes.append(len(write.content))
        for found in scan(write.content, path):
            findings.setdefault((found.kind, found.fingerprint), found)
    for n, text in enumerate(texts):
        if n >= TEXT_LIMIT:
            problems.append("the body has too many strings to scan")
            break
        for found in scan_text(text):
            findings.setdefault((found.kind, found.fingerprint), found)
    return Change(
        refs=tuple(refs), paths=tuple(paths), added_bytes=sum(sizes), largest=max(sizes, default=0),
        secrets=tuple(findings.values()), unestablished="; ".join(dict.fromkeys(problems)),
        diffs=_shown(shown, {f.path for f in findings.values()}), heads=tuple(dict.fromkeys(heads)),
        default_branch_at=default_branch_at,
    )


def merge_changes(changes: Iterable[Change], *, default_branch_at: str = "") -> Change:
    """Several writes of one request (a GraphQL document's fields) as one change: it is allowed
    only if all of it is."""
    items = list(changes)
    return Change(
        refs=tuple(r for c in items for r in c.refs),
        paths=tuple(dict.fromkeys(p for c in items for p in c.paths)),
        added_bytes=sum(c.added_bytes for c in items),
        largest=max((c.largest for c in items), default=0),
        secrets=tuple(dict.fromkeys(s for c in items for s in c.secrets)),
        unestablished="; ".join(dict.fromkeys(c.unestablished for c in items if c.unestablished)),
        diffs=tuple(d for c in items for d in c.diffs),
        heads=tuple(dict.fromkeys(h for c in items for h in c.heads)),
        default_branch_at=default_branch_at or next((c.default_branch_at for c in items if c.default_branch_at), ""),
    )


__all__ = [
    "DEFAULT_BRANCH_REF", "SMALL_BODY", "BodyUnreadable", "FileWrite", "WriteUnreadable", "body_texts",
    "branch_created", "branch_deleted", "branch_ref", "branch_refs", "canonical_branch", "canonical_path",
    "decode_base64", "decode_content", "file_change", "merge_changes", "qualified_refs", "read_json", "ref_changes",
    "tag_created", "tag_deleted", "unestablished", "write_change",
]
