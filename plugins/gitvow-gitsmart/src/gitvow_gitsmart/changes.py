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
    """(mode, name, object id) of each entry of a tree object, read as git reads it.

    The mode is parsed as git parses it (octal digits, so a zero-padded ``040000`` is the tree
    mode ``40000``) and given back in its canonical spelling, so nothing downstream compares a
    spelling git does not. A tree git's fsck refuses is refused here too (``PackError``), since
    a forge that does not check its objects stores it and git then reads it its own way: a name
    given twice (git reads the first, a reader of the last would see another file), a ``.git``
    entry in any case (a repository inside the checkout), an empty, ``.``, ``..`` or ``/``-holding
    name, a mode that is not octal."""
    pos, end = 0, len(raw)
    seen: set[bytes] = set()
    while pos < end:
        space = raw.find(b" ", pos)
        nul = raw.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 21 > end:
            raise PackError("malformed tree object")
        name = raw[space + 1: nul]
        if not name or b"/" in name or name in (b".", b".."):
            raise PackError("a tree entry has an impossible name")
        if name.lower() == b".git":
            raise PackError("a tree entry is named .git")
        if name in seen:
            raise PackError("a tree names the same entry twice")
        seen.add(name)
        mode = raw[pos:space]
        if not mode or not mode.isdigit() or b"8" in mode or b"9" in mode:
            raise PackError("a tree entry's mode is not octal")
        yield b"%o" % int(mode, 8), name.decode("utf-8", "surrogateescape"), raw[nul + 1: nul + 21].hex()
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


class KnownTrees:
    """Commits' root trees and tree objects seen in earlier packs, by id, at most ``limit`` bytes
    (least recently used dropped first).

    Everything in it is content-addressed (each id was computed here from the content), so it
    is true whoever pushed it and whatever became of that push: a later push whose parent is
    a commit seen before diffs against that commit's real trees, exactly."""

    def __init__(self, limit: int = 32 * 1024 * 1024) -> None:
        from collections import OrderedDict
        from threading import Lock

        self.limit = limit
        self._trees: OrderedDict[str, bytes] = OrderedDict()
        self._roots: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def tree(self, oid: str) -> bytes | None:
        with self._lock:
            raw = self._trees.get(oid)
            if raw is not None:
                self._trees.move_to_end(oid)
            return raw

    def root(self, commit: str) -> str | None:
        with self._lock:
            return self._roots.get(commit)

    def learn(self, pack: Pack) -> None:
        """Remember a read pack's trees and its commits' root trees."""
        roots = {oid: commit_links(raw)[0] for oid, raw in pack.commits.items()}
        with self._lock:
            self._roots.update(roots)
            while len(self._roots) > 100_000:
                self._roots.popitem(last=False)
            for oid, raw in pack.trees.items():
                if oid not in self._trees:
                    self._trees[oid] = raw
                    self._bytes += len(raw)
            while self._bytes > self.limit and self._trees:
                _, old = self._trees.popitem(last=False)
                self._bytes -= len(old)


def _entries(raw: bytes) -> dict[str, tuple[bytes, str]]:
    return {name: (mode, oid) for mode, name, oid in tree_entries(raw)}


class _Paths:
    """Changed paths of every pushed commit: its tree diffed against each parent's where the
    parent's trees are known (in the pack, or seen before: :class:`KnownTrees`), exactly —
    additions, modifications, deletions, renames, mode changes. Where the old side is not
    known, the new tree is read alone: a path whose content is in the pack is changed, and a
    carried directory with nothing new in it is ``dir/`` (something left it)."""

    def __init__(self, pack: Pack, known: KnownTrees | None) -> None:
        self.pack = pack
        self.known = known
        self.paths: dict[str, None] = {}
        self.blob_path: dict[str, str] = {}
        self.walked: set[tuple[str, str]] = set()
        self.diffed: set[tuple[str, str, str]] = set()
        #: Why some commit's changed paths could not be read (the push is refused then).
        self.unreadable = ""
        #: Carried directories read without their old side, with the names they hold now.
        self.read_alone: dict[str, frozenset[str]] = {}
        #: Parent commits whose trees were not known where a tree was read alone.
        self.old_commits: dict[str, None] = {}
        self._parent = ""

    def raw_tree(self, oid: str) -> bytes | None:
        raw = self.pack.trees.get(oid)
        if raw is None and self.known is not None:
            raw = self.known.tree(oid)
        return raw

    def root(self, commit: str) -> str | None:
        raw = self.pack.commits.get(commit)
        if raw is not None:
            return commit_links(raw)[0]
        return self.known.root(commit) if self.known is not None else None

    def commit(self, oid: str) -> None:
        tree, parents = commit_links(self.pack.commits[oid])
        if tree not in self.pack.trees and self.raw_tree(tree) is None:
            self.forge_tree(oid, tree, parents)
            return
        if not parents:
            self.diff(tree, None, "")
        for parent in parents:
            self._parent = parent
            old = self.root(parent)
            if old is None:
                self.tree(tree, "")
            else:
                self.diff(tree, old, "")

    def forge_tree(self, oid: str, tree: str, parents: tuple[str, ...]) -> None:
        """A commit whose root tree the forge has already (an empty commit, a return to an
        earlier state): no change if it is its parents' tree. Where a parent's root is not
        known, the forge can tell: the root counts as read alone with nothing known in it, so
        any path rule asks the forge for the parent's trees, and the push read again then
        either finds the tree (no change) or is refused. Otherwise it cannot be read here."""
        roots = [self.root(parent) for parent in parents]
        if parents and all(root == tree for root in roots):
            return
        if parents and all(root in (None, tree) for root in roots):
            for parent, root in zip(parents, roots, strict=True):
                if root is None:
                    self.old_commits.setdefault(parent)
            self.read_alone[""] = frozenset()  # nothing known to be there: every rule could be hidden
            return
        self.unreadable = f"commit {oid[:12]} has a tree that is neither in the pack nor its parent's"

    def changed(self, path: str, oid: str) -> None:
        self.paths.setdefault(path)
        self.blob_path.setdefault(oid, path)

    def diff(self, new: str, old: str | None, prefix: str) -> None:
        """Both trees known: every entry that differs, recursively; a side not known is read alone."""
        key = (new, old or "", prefix)
        if new == old or key in self.diffed:
            return
        self.diffed.add(key)
        raw_new = self.raw_tree(new)
        raw_old = self.raw_tree(old) if old is not None else b""
        if raw_new is None or raw_old is None:
            if new in self.pack.trees:
                self.tree(new, prefix)
            else:
                self.paths.setdefault(prefix or "/")  # neither side readable: the whole directory
            return
        before, after = _entries(raw_old), _entries(raw_new)
        for name in sorted(before.keys() | after.keys()):
            self.entry(prefix + name, after.get(name), before.get(name))

    def entry(self, path: str, new: tuple[bytes, str] | None, old: tuple[bytes, str] | None) -> None:
        if new == old:
            return
        new_tree = new is not None and new[0] == _TREE_MODE
        old_tree = old is not None and old[0] == _TREE_MODE
        if new is not None and new_tree:
            self.diff(new[1], old[1] if old is not None and old_tree else None, f"{path}/")
        elif new is not None:
            self.changed(path, new[1])
        if old is not None and old_tree and not new_tree:
            self.gone(old[1], f"{path}/")  # a directory deleted (or replaced by a file)
        elif old is not None and not old_tree and (new is None or new_tree):
            self.paths.setdefault(path)  # a file deleted (or replaced by a directory)

    def gone(self, oid: str, prefix: str, depth: int = 0) -> None:
        """A deleted directory: each file in it where its tree is known, else the directory."""
        raw = self.raw_tree(oid)
        if raw is None or depth > 64:
            self.paths.setdefault(prefix)
            return
        for mode, name, child in tree_entries(raw):
            if mode == _TREE_MODE:
                self.gone(child, f"{prefix}{name}/", depth + 1)
            else:
                self.paths.setdefault(f"{prefix}{name}")

    def tree(self, oid: str, prefix: str) -> None:
        key = (oid, prefix)
        if key in self.walked:
            return
        self.walked.add(key)
        raw = self.pack.trees[oid]
        self.old_commits.setdefault(self._parent)
        names = frozenset(name.lower() for _, name, _ in tree_entries(raw))
        held = self.read_alone.get(prefix)  # read alone twice: a name is there only if in both
        self.read_alone[prefix] = names if held is None else held & names
        new = False
        for mode, name, child in tree_entries(raw):
            path = f"{prefix}{name}"
            if mode == _TREE_MODE:
                if child in self.pack.trees:
                    new = True
                    self.tree(child, f"{path}/")
            elif mode == _GITLINK_MODE or child in self.pack.blobs:
                new = True
                self.changed(path, child)
        if not new and prefix:
            self.paths.setdefault(prefix)  # carried, yet nothing new inside: something left it


def push_change(refs: tuple[RefUpdate, ...], pack: Pack, known: KnownTrees | None = None) -> Change:
    """The change a push makes; raises :class:`PackError` on a malformed commit or tree.
    ``known``: trees seen in earlier packs, to diff against where this pack lacks the parent's."""
    changes = tuple(RefChange(r.ref, r.old, r.new, ref_kind(r, pack)) for r in refs)
    walker = _Paths(pack, known)
    for oid in pack.commits:  # every pushed commit: what a ref's history gains, and what a tag names
        walker.commit(oid)
    secrets: list[SecretFinding] = []
    for oid, found in pack.findings.items():
        path = walker.blob_path.get(oid, "")
        secrets.extend(SecretFinding(f.kind, f.fingerprint, path) for f in found)
    if known is not None:
        known.learn(pack)
    return Change(
        refs=changes,
        paths=tuple(walker.paths),
        added_bytes=sum(pack.blobs.values()),
        largest=max(pack.blobs.values(), default=0),
        secrets=tuple(secrets),
        unestablished=walker.unreadable,
        read_alone=tuple(walker.read_alone.items()),
        old_commits=tuple(c for c in walker.old_commits if c),
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


__all__ = ["WALK_LIMIT", "KnownTrees", "commit_links", "push_change", "ref_kind", "tip_files", "tree_entries"]
