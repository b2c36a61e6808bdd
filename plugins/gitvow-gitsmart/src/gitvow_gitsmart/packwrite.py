"""Writing small packs: the contract kit's fixtures and the tests push real objects.

Not used on the request path; kept beside the reader so both speak the same format.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Sequence

from gitvow_gitsmart.pack import BLOB, COMMIT, TREE, TYPE_NAMES, object_id

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _entry(kind: int, content: bytes) -> bytes:
    size = len(content)
    header = bytearray([(kind << 4) | (size & 15)])
    size >>= 4
    while size:
        header[-1] |= 0x80
        header.append(size & 0x7F)
        size >>= 7
    return bytes(header) + zlib.compress(content, 1)


def pack(objects: Iterable[tuple[int, bytes]]) -> bytes:
    """A version-2 pack of whole (undeltified) objects, checksum included."""
    items = list(objects)
    body = b"PACK" + (2).to_bytes(4, "big") + len(items).to_bytes(4, "big")
    body += b"".join(_entry(kind, content) for kind, content in items)
    return body + hashlib.sha1(body, usedforsecurity=False).digest()


def tree(entries: Sequence[tuple[str, str, str]]) -> bytes:
    """A tree object from (mode, name, id) entries, sorted as git sorts them."""
    def key(entry: tuple[str, str, str]) -> bytes:
        return entry[1].encode() + (b"/" if entry[0] == "40000" else b"")

    return b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(oid) for mode, name, oid in sorted(entries, key=key))


def commit(tree_id: str, parents: Sequence[str] = (), message: str = "change") -> bytes:
    lines = [f"tree {tree_id}", *(f"parent {p}" for p in parents),
             "author agent <agent@example.test> 1700000000 +0000", "committer agent <agent@example.test> 1700000000 +0000",
             "", message, ""]
    return "\n".join(lines).encode()


def files_commit(files: dict[str, bytes], parents: Sequence[str] = ()) -> tuple[str, list[tuple[int, bytes]]]:
    """A commit holding ``files`` (paths with ``/`` make subtrees) and every object it needs."""
    objects: list[tuple[int, bytes]] = []

    def build(items: dict[str, bytes]) -> str:
        here: list[tuple[str, str, str]] = []
        subdirs: dict[str, dict[str, bytes]] = {}
        for path, content in items.items():
            head, _, rest = path.partition("/")
            if rest:
                subdirs.setdefault(head, {})[rest] = content
            else:
                objects.append((BLOB, content))
                here.append(("100644", head, object_id(BLOB, content)))
        for name, sub in subdirs.items():
            here.append(("40000", name, build(sub)))
        raw = tree(here)
        objects.append((TREE, raw))
        return object_id(TREE, raw)

    root = build(files)
    raw = commit(root, parents)
    objects.append((COMMIT, raw))
    return object_id(COMMIT, raw), objects


__all__ = ["EMPTY_TREE", "TYPE_NAMES", "commit", "files_commit", "pack", "tree"]
