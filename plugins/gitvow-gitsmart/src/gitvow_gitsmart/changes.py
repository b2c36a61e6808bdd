"""A push's :class:`~gitvow.change.Change`, from its ref-update commands and its pack.

* **Kind of each ref update.** A deletion (new id all zeros) and a creation (old id all zeros)
  say so themselves. For an update, the pushed commits are walked from the new tip, within
  the pack, towards the old one: reached, it is a fast-forward. Not reached — the walk left
  the pack at a commit the forge already has, or the new tip is not in the pack at all —
  the pack cannot establish a fast-forward, and the update counts as ``forced`` (``ref.force``,
  refused unless the policy allows force updates): fail closed.
* **Changed paths.** Every tree of a pushed commit is walked through the trees the pack
  carries; a path whose content is in the pack is changed (added or modified). A tree that
  the pack carries but in which nothing new sits (a file deleted, or moved to content the
  forge has) is itself a changed path (``dir/``), so a deletion inside a protected directory
  is seen. Submodule pointers in a carried tree count as changed.
* **Sizes and secrets.** Every blob of the pack counts (the new contents), and every one was
  scanned as it was inflated; a finding is named by the first path its blob sits at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gitvow.change import CREATED, DELETED, FAST_FORWARD, FORCED, Change, RefChange, SecretFinding
from gitvow.request import ZERO_OID, RefUpdate
from gitvow_gitsmart.pack import Pack, PackError

#: Most pushed commits walked per ref update when deciding a fast-forward.
WALK_LIMIT = 100_000
_TREE_MODE = b"40000"
_GITLINK_MODE = b"160000"


def tree_entries(raw: bytes) -> Iterator[tuple[bytes, str, str]]:
    """(mode, name, object id) of each entry of a tree object."""
    pos, end = 0, len(raw)
    while pos < end:
        space = raw.find(b" ", pos)
        nul = raw.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 21 > end:
            raise PackError("malformed tree object")
        name = raw[space + 1: nul]
        if not name or b"/" in name or name in (b".", b".."):
            raise PackError("a tree entry has an impossible name")
        yield raw[pos:space], name.decode("utf-8", "surrogateescape"), raw[nul + 1: nul + 21].hex()
        pos = nul + 21


def commit_links(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """A commit object's tree and parents."""
    tree = ""
    parents: list[str] = []
    for line in raw.split(b"\n"):
        if not line:
            break
        if line.startswith(b"tree "):
            tree = line[5:].decode("ascii", "replace")
        elif line.startswith(b"parent "):
            parents.append(line[7:].decode("ascii", "replace"))
    if len(tree) != 40:
        raise PackError("a commit without a tree")
    return tree, tuple(parents)


def ref_kind(update: RefUpdate, pack: Pack) -> str:
    """``created``, ``deleted``, ``fast-forward`` or ``forced`` (a fast-forward the pack cannot show)."""
    if update.new == ZERO_OID:
        return DELETED
    if update.old == ZERO_OID:
        return CREATED
    if update.old == update.new:
        return FAST_FORWARD
    seen: set[str] = set()
    todo = [update.new]
    while todo and len(seen) < WALK_LIMIT:
        oid = todo.pop()
        if oid == update.old:
            return FAST_FORWARD
        if oid in seen:
            continue
        seen.add(oid)
        raw = pack.commits.get(oid)
        if raw is not None:
            todo.extend(commit_links(raw)[1])
    return FORCED


class _Paths:
    """Changed paths of every pushed commit, each tree walked once per place it sits."""

    def __init__(self, pack: Pack) -> None:
        self.pack = pack
        self.paths: dict[str, None] = {}
        self.blob_path: dict[str, str] = {}
        self.walked: set[tuple[str, str]] = set()

    def tree(self, oid: str, prefix: str) -> None:
        key = (oid, prefix)
        if key in self.walked:
            return
        self.walked.add(key)
        raw = self.pack.trees[oid]
        new = False
        for mode, name, child in tree_entries(raw):
            path = f"{prefix}{name}"
            if mode == _TREE_MODE:
                if child in self.pack.trees:
                    new = True
                    self.tree(child, f"{path}/")
            elif mode == _GITLINK_MODE or child in self.pack.blobs:
                new = True
                self.paths.setdefault(path)
                self.blob_path.setdefault(child, path)
        if not new and prefix:
            self.paths.setdefault(prefix)  # carried, yet nothing new inside: something left it


def push_change(refs: tuple[RefUpdate, ...], pack: Pack) -> Change:
    """The change a push makes; raises :class:`PackError` on a malformed commit or tree."""
    changes = tuple(RefChange(r.ref, r.old, r.new, ref_kind(r, pack)) for r in refs)
    walker = _Paths(pack)
    for oid in pack.commits:  # every pushed commit: what a ref's history gains, and what a tag names
        tree = commit_links(pack.commits[oid])[0]
        if tree in pack.trees:
            walker.tree(tree, "")
    secrets: list[SecretFinding] = []
    for oid, found in pack.findings.items():
        path = walker.blob_path.get(oid, "")
        secrets.extend(SecretFinding(f.kind, f.fingerprint, path) for f in found)
    return Change(
        refs=changes,
        paths=tuple(walker.paths),
        added_bytes=sum(pack.blobs.values()),
        largest=max(pack.blobs.values(), default=0),
        secrets=tuple(secrets),
    )


def tip_files(pack: Pack, tip: str, wanted: Callable[[str], bool], *, limit: int = 64 * 1024) -> dict[str, bytes]:
    """The files at paths ``wanted`` accepts in the pushed commit ``tip``, as the push leaves
    them (the pack's trees only; at most ``limit`` bytes of each)."""
    found: dict[str, bytes] = {}
    raw = pack.commits.get(tip)
    if raw is None:
        return found
    todo = [(commit_links(raw)[0], "")]
    while todo:
        tree, prefix = todo.pop()
        if tree not in pack.trees:
            continue
        for mode, name, oid in tree_entries(pack.trees[tree]):
            path = f"{prefix}{name}"
            if mode == _TREE_MODE:
                todo.append((oid, f"{path}/"))
            elif wanted(path) and oid in pack.blobs:
                content = pack.blob(oid)
                if content is not None:
                    found[path] = content[:limit]
    return found


__all__ = ["WALK_LIMIT", "commit_links", "push_change", "ref_kind", "tip_files", "tree_entries"]
