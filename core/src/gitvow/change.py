"""What a write changes: the ref updates, paths, sizes and secrets an adapter read from it.

The envelope of a request (its operation and repository) says *that* an agent writes; a
:class:`Change` says *what* it writes. Adapters fill one from the wire — the git smart-HTTP
adapter from the pushed pack, the forge adapters from a contents or commit API body — and
the pipeline's ``change`` stage judges it against :class:`gitvow.change_rules.ChangeRules`
(``[branches]``, ``[paths]``, ``[size]``, ``[secrets]``), the same way for every forge.

Two kinds of ref update are operations of their own in the vocabulary, so modes, relays and
approvals apply to them: a forced (non-fast-forward) update is ``ref.force`` and a deletion
is ``ref.delete`` (:func:`Change.operations`). Whatever an adapter could not establish is in
``unestablished`` and the stage refuses it (``change_unestablished``): fail closed.
"""

from __future__ import annotations

from dataclasses import dataclass

CREATED = "created"
FAST_FORWARD = "fast-forward"
FORCED = "forced"
DELETED = "deleted"
KINDS = (CREATED, FAST_FORWARD, FORCED, DELETED)

FORCE_OPERATION = "ref.force"
DELETE_OPERATION = "ref.delete"

BRANCH_PREFIX = "refs/heads/"
#: The ref of a write through an API that names no branch (:mod:`gitvow.api_change`): the
#: repository's default branch, which the ``change`` stage asks the enforcement point for.
DEFAULT_BRANCH_REF = "HEAD"


@dataclass(frozen=True, slots=True)
class RefChange:
    """One ref moved by a write: its full name, old and new object ids, and its kind
    (``created``, ``fast-forward``, ``forced`` or ``deleted``). An update whose ancestry could not
    be established from what the request carries is ``forced``: refused unless force updates are."""

    ref: str
    old: str
    new: str
    kind: str

    @property
    def branch(self) -> str | None:
        """The branch name of a ``refs/heads/`` ref, else None (a tag, a note, a pull ref)."""
        return self.ref[len(BRANCH_PREFIX):] if self.ref.startswith(BRANCH_PREFIX) else None

    @property
    def name(self) -> str:
        """What branch patterns are matched against: the branch name, or the full ref otherwise."""
        return self.branch if self.branch is not None else self.ref


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A credential of a known format in what the write adds: its kind and a fingerprint (a
    hash prefix that identifies it in ``[secrets] allow`` and in the audit), never the secret."""

    kind: str
    fingerprint: str
    path: str = ""


@dataclass(frozen=True, slots=True)
class Change:
    """What one write changes.

    ``paths`` are every path the write adds, modifies or deletes, exactly; ``files`` counts
    them. ``added_bytes`` sums the new contents (blobs) the write carries and ``largest`` is
    the largest of them. ``secrets`` are the credentials found in the new contents and the
    write body. ``diffs`` hold the text of protected files as the write leaves them (by path),
    for a human asked to approve. ``unestablished`` is why some of this could not be
    established (the stage refuses the write then); empty when it all was.
    """

    refs: tuple[RefChange, ...] = ()
    paths: tuple[str, ...] = ()
    added_bytes: int = 0
    largest: int = 0
    secrets: tuple[SecretFinding, ...] = ()
    unestablished: str = ""
    diffs: tuple[tuple[str, str], ...] = ()
    #: Why the ref updates could not be read, where the write names them only implicitly (a
    #: ``git push`` with no refspec, ``--all``, ``--mirror``): refused (``change_unestablished``)
    #: only where a listed branch rule could refuse one of them.
    unread_refs: str = ""
    #: Branches the write names as the agent's own without writing them (a pull request's
    #: head): only the allowed-branch patterns judge them.
    heads: tuple[str, ...] = ()
    #: Where the forge's API describes the written repository (a path on the request's host
    #: answering JSON with ``default_branch``): how an API write's default branch is read when
    #: the forge serves git on another host (api.github.com). ``{repo}`` (``owner/name``) and
    #: ``{repo_quoted}`` (percent-encoded, ``/`` included) stand for the repository once
    #: established (a GraphQL write may name it by node id only).
    default_branch_at: str = ""
    #: Directories of the new trees read without their old side (a pushed commit whose parent's
    #: trees are not known: the first push on top of a clone), each with the names it holds
    #: now (lower-cased). Something could have been deleted there unseen:
    #: :meth:`gitvow.change_rules.ChangeRules.could_hide` says whether a path rule could name it.
    read_alone: tuple[tuple[str, frozenset[str]], ...] = ()
    #: The parent commits whose trees would make ``paths`` exact (asked of the forge then).
    old_commits: tuple[str, ...] = ()

    @property
    def files(self) -> int:
        return len(self.paths)

    def operations(self) -> tuple[str, ...]:
        """The operations of the vocabulary the ref updates perform beyond the write itself."""
        found: list[str] = []
        if any(ref.kind == FORCED for ref in self.refs):
            found.append(FORCE_OPERATION)
        if any(ref.kind == DELETED for ref in self.refs):
            found.append(DELETE_OPERATION)
        return tuple(found)

    def summary(self) -> dict[str, object]:
        """A JSON-ready account for the audit line and the approval desk (no file contents)."""
        return {
            "refs": [{"ref": r.ref, "old": r.old, "new": r.new, "kind": r.kind} for r in self.refs],
            "paths": list(self.paths[:200]),
            "files": self.files,
            "added_bytes": self.added_bytes,
            "largest": self.largest,
            "secrets": [{"kind": s.kind, "fingerprint": s.fingerprint, "path": s.path} for s in self.secrets],
            **({"heads": list(self.heads)} if self.heads else {}),
            **({"unestablished": self.unestablished} if self.unestablished else {}),
        }


#: The operations every request of which moves a ref or changes content, on every forge and
#: transport: each must carry a :class:`Change` (established, or saying what was not), or the
#: pipeline's ``change`` stage refuses it (``change_unestablished``) before any change rule runs.
#:
#: Why exactly these: the operation alone says the request writes refs or content, so the
#: engine can hold every adapter to it without reading a body, and an adapter that forgets
#: (a third party's, a new route, an MCP tool) fails closed. Left out, because their requests
#: do not always move a ref and the operation cannot tell which do (refusing them without a
#: Change would refuse legitimate traffic): ``pr.create`` (it names a head, moves none; its
#: head is judged where the adapter reads it), ``pr.edit`` (a title or a body moves nothing; a
#: new base is a Change where the adapter reads one), ``pr.merge`` by number (the base it
#: writes is the pull request's, on the forge, not in the request: its mode or relay decides)
#: and ``pr.update_branch`` (likewise the pull request's head).
CHANGING_OPERATIONS: frozenset[str] = frozenset({"git.push", "ref.write", "ref.force", "ref.delete",
                                                 "contents.write"})


#: The change of a request of one of those operations that itself moves nothing and writes
#: nothing (git's ref advertisement before a push, which is ``git.push`` so that a mode refusing
#: pushes refuses it first): established, and empty.
NOTHING = Change()


def needs_change(operations: tuple[str, ...]) -> str | None:
    """The first of ``operations`` that must carry a :class:`Change`, or None."""
    return next((op for op in operations if op in CHANGING_OPERATIONS), None)


def with_operations(operations: tuple[str, ...], change: Change) -> tuple[str, ...]:
    """``operations`` with the change's own (``ref.force``, ``ref.delete``) added once each."""
    extra = tuple(op for op in change.operations() if op not in operations)
    return (*operations, *extra)


#: A change this decision does not see but another one reads from the request itself: a tool
#: call whose command line cannot show it (the agent gate's ``partial`` calls, which the proxy
#: judges from the request), an audit-log line replayed without its body (``gitvow replay``).
#: The change stage passes it; compared by identity, so no adapter can produce it.
READ_ELSEWHERE = Change(unestablished="read where the request's body is")


__all__ = [
    "BRANCH_PREFIX",
    "CHANGING_OPERATIONS",
    "CREATED",
    "DEFAULT_BRANCH_REF",
    "DELETED",
    "DELETE_OPERATION",
    "FAST_FORWARD",
    "FORCED",
    "FORCE_OPERATION",
    "KINDS",
    "NOTHING",
    "READ_ELSEWHERE",
    "Change",
    "RefChange",
    "SecretFinding",
    "needs_change",
    "with_operations",
]

