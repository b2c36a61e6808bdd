"""What a write through a forge's API changes: a :class:`~gitvow.change.Change` from a body.

A git push carries its change in a pack (the gitsmart plugin reads it); a contents API
``PUT``, a ``createCommitOnBranch`` mutation, a GitLab commits request or a ref update through
the API carries it in JSON. Every forge adapter builds that change here, from what the forge
itself reads, so the ``change`` stage judges API writes exactly as it judges pushes:

- :func:`branch_refs` turns a branch argument into the refs the forge may take it for (a
  spelling the forge could read two ways yields both, so neither slips past a branch rule);
- :func:`file_path` canonicalises a repository path the way the forge stores it and refuses
  what it cannot (``..``, empty segments, control characters): such a write is unestablished;
- :func:`decode_base64` decodes file content strictly (the forge must not read other bytes
  than were scanned);
- :func:`body_texts` lists every string of a JSON body (keys too), decoded, so a credential
  hidden behind a JSON escape (``\\u0041KIA…``) is scanned as the forge will store it;
- :func:`write_change` puts it together: paths, sizes, secrets found in the new contents and
  in the body's other texts, the protected files' new text for the human asked to approve.

What cannot be established goes into ``unestablished`` (the stage refuses it with
``change_unestablished``); a write that names no branch names :data:`~gitvow.change.DEFAULT_REF`
and ``default_branch_at``, where the forge's API describes the repository.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gitvow.change import BRANCH_PREFIX, Change, RefChange, SecretFinding
from gitvow.change_rules import DEFAULT_RULES, ChangeRules
from gitvow.secrets import scan, scan_text

#: Text of each protected file kept for the approval desk, and how many such files.
DIFF_LIMIT = 64 * 1024
DIFF_FILES = 20
#: The longest body of a write that carries no file content (a ref update, a merge) read.
SMALL_BODY = 64 * 1024
#: Most strings of one body scanned apart from file contents (a body is bounded by the proxy).
TEXT_LIMIT = 100_000
_WHITESPACE = b" \t\r\n"


class BodyUnreadable(ValueError):
    """The body is not what the forge's API reads (not JSON, or not an object)."""


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One path an API write changes, as given (canonicalised by :func:`write_change`):
    ``content`` is the new content it carries, None when it carries none (a deletion, or a
    path pointed at content the forge already has). A path ending in ``/`` is a directory
    whose content changes in ways the write does not list (a subtree put in place by id)."""

    path: str
    content: bytes | None


def read_json(body: bytes, limit: int | None = None) -> dict[str, object]:
    """A JSON object body (at most ``limit`` bytes), or :class:`BodyUnreadable`."""
    if limit is not None and len(body) > limit:
        raise BodyUnreadable(f"the body is over {limit} bytes")
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BodyUnreadable("the body is not JSON") from None
    if not isinstance(data, dict):
        raise BodyUnreadable("the body is not a JSON object")
    return data


def branch_refs(name: str) -> tuple[str, ...]:
    """The full refs a branch argument may name: ``x`` → ``refs/heads/x``; ``refs/…`` as it is
    (and, for ``refs/heads/x``, also a branch literally called ``refs/heads/x``); ``heads/x`` also
    as ``refs/heads/x``, which some endpoints read it as. Empty for an empty name."""
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


def file_path(raw: str) -> str | None:
    """``raw`` as the repository path the forge writes, or None when it cannot be said exactly:
    empty, ``.``/``..`` or empty segments, a backslash, a control character."""
    path = raw.strip("/")
    if not path or "\\" in path or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return path


def decode_base64(text: str) -> bytes | None:
    """Standard base64 as the forges read file content (line breaks allowed), or None when it
    is anything else: the bytes the forge stores must be the bytes that were scanned."""
    data = text.encode("ascii", "replace")
    data = bytes(byte for byte in data if byte not in _WHITESPACE) if any(c in data for c in _WHITESPACE) else data
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def body_texts(value: object, *, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string of a decoded JSON value, keys included, depth first; the values of keys in
    ``skip`` (file contents scanned as decoded bytes instead) are left out."""
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
    protected: ChangeRules = DEFAULT_RULES,
) -> Change:
    """The change an API write makes.

    ``files`` are the paths it sets or deletes (each canonicalised; one that cannot be is
    unestablished); their contents are counted for ``[size]`` and scanned for credentials, as
    are ``contents`` (new content at no path the write names: a git blob) and ``texts`` (the
    body's other strings: a commit message, an author). ``protected``
    (default: the built-in ``[paths]`` rules, as for held pushes) says which files' new text is kept for the
    human asked to approve."""
    paths: dict[str, None] = {}
    secrets: dict[tuple[str, str], SecretFinding] = {}
    diffs: list[tuple[str, str]] = []
    problems = [unestablished] if unestablished else []
    sizes = [len(content) for content in contents]
    for content in contents:
        for found in scan(content):
            secrets.setdefault((found.kind, found.fingerprint), found)
    for write in files:
        path = file_path(write.path)
        if path is None:
            problems.append("a file path the forge would not store as written")
            continue
        if write.path.endswith("/"):
            path += "/"
        paths.setdefault(path)
        if write.content is None:
            continue
        sizes.append(len(write.content))
        for found in scan(write.content, path):
            secrets.setdefault((found.kind, found.fingerprint), found)
        if len(diffs) < DIFF_FILES and protected.path_verdict(path) is not None:
            diffs.append((path, write.content[:DIFF_LIMIT].decode("utf-8", "replace")))
    for n, text in enumerate(texts):
        if n >= TEXT_LIMIT:
            problems.append("the body has too many strings to scan")
            break
        for found in scan_text(text):
            secrets.setdefault((found.kind, found.fingerprint), found)
    return Change(
        refs=tuple(refs),
        paths=tuple(paths),
        added_bytes=sum(sizes),
        largest=max(sizes, default=0),
        secrets=tuple(secrets.values()),
        unestablished="; ".join(dict.fromkeys(problems)),
        diffs=tuple(diffs),
        heads=tuple(dict.fromkeys(heads)),
        default_branch_at=default_branch_at,
    )


def merge_changes(changes: Iterable[Change], *, default_branch_at: str = "") -> Change:
    """Several fields' changes as one write (one document is allowed only if all of it is)."""
    items = list(changes)
    paths = tuple(dict.fromkeys(p for c in items for p in c.paths))
    return Change(
        refs=tuple(r for c in items for r in c.refs),
        paths=paths,
        added_bytes=sum(c.added_bytes for c in items),
        largest=max((c.largest for c in items), default=0),
        secrets=tuple(dict.fromkeys(s for c in items for s in c.secrets)),
        unestablished="; ".join(dict.fromkeys(c.unestablished for c in items if c.unestablished)),
        diffs=tuple(d for c in items for d in c.diffs),
        heads=tuple(dict.fromkeys(h for c in items for h in c.heads)),
        default_branch_at=default_branch_at or next((c.default_branch_at for c in items if c.default_branch_at), ""),
    )


def unestablished(why: str, refs: Sequence[RefChange] = ()) -> Change:
    """A change nothing more of could be read: refused by the stage with ``change_unestablished``."""
    return Change(refs=tuple(refs), unestablished=why)


__all__ = [
    "DIFF_FILES",
    "DIFF_LIMIT",
    "SMALL_BODY",
    "BodyUnreadable",
    "FileWrite",
    "body_texts",
    "branch_refs",
    "decode_base64",
    "file_path",
    "merge_changes",
    "qualified_refs",
    "read_json",
    "ref_changes",
    "unestablished",
    "write_change",
]
