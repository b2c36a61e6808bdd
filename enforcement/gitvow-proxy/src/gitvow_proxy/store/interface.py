"""The state store's interface: what every store keeps, and the semantics they share.

Where the proxy keeps what must outlive one request: budget windows, write counters,
run-state flags, the canary tokens it issued and the approvals it staged. ``gitvow
approvals``, ``pause``, ``resume`` and ``status`` open the same store as the proxy: every
run-time control is a store operation, so a store shared between processes is all another
implementation has to provide. The implementations (:mod:`.memory_store`,
:mod:`.sqlite_store`, :mod:`.redis_store`) import this module only, never each other.

Approvals (:mod:`gitvow_proxy.approvals`) move through their statuses only by the atomic
operations below: :meth:`Store.stage` (never two live approvals of one request),
:meth:`Store.decide` (only a pending one), :meth:`Store.claim` (``approved → sending`` for
exactly one sender) and :meth:`Store.finish`. The rules every implementation applies the
same way (:func:`tell_expired`, :func:`check_decidable`, :func:`retry_after`,
:func:`budget_amounts`) live here, public, so each store uses them without reaching into
another's privates.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gitvow.errors import GitvowError
from gitvow_proxy.approvals import (
    EXPIRED,
    PENDING,
    Approval,
)

#: Run-state flag kinds: a repository paused, a repository whose auto-merge is off.
PAUSED = "paused"
AUTO_MERGE_OFF = "auto_merge_off"
FLAG_KINDS = (PAUSED, AUTO_MERGE_OFF)

#: Every run-state flag kind → the repositories flagged so (lower-case ``owner/name``).
Flags = Mapping[str, frozenset[str]]


@dataclass(frozen=True, slots=True)
class Admission:
    """What :meth:`Store.admit` answered: ``flags`` (the store's, every kind) when the run-time
    flags were no longer those the caller saw, and then nothing was taken; otherwise ``wait``
    as :meth:`Store.take` answers it (None: taken)."""

    wait: float | None
    flags: Flags | None = None


#: Seconds of the smallest bucket a replica counts its decisions in for the cluster's chart.
TALLY_SLOT = 120
#: The chart's bucket widths a shared store keeps, each with how long (seconds): the desk's
#: 1 h (30 buckets), 24 h (24) and 7 d (28) spans. Each width is a multiple of TALLY_SLOT.
TIMELINE = ((120, 3600), (3600, 86400), (21600, 7 * 86400))


class StoreError(GitvowError):
    """The state store cannot be opened or used; names the path."""


class ApprovalError(GitvowError):
    """An approval that does not exist or is not in the status the operation needs."""


#: An expired approval's ``reason`` once the agent's retry was refused with approval_expired.
TOLD_EXPIRED = "expired unanswered; the agent was told"


def tell_expired(latest: Approval | None, now: float) -> Approval | None:
    """An approval that expired (by now or by the sender's sweep) answers the agent's next
    identical request once with approval_expired; the one after that stages afresh."""
    if latest is None:
        return None
    if (latest.status == PENDING and latest.expires <= now) or (latest.status == EXPIRED and latest.reason != TOLD_EXPIRED):
        return latest.with_(status=EXPIRED, reason=TOLD_EXPIRED, updated=now)
    return None


def check_decidable(found: Approval | None, approval_id: str, now: float) -> Approval:
    if found is None:
        raise ApprovalError(f"no approval {approval_id!r}")
    if found.status == PENDING and found.expires <= now:
        raise ApprovalError(f"approval {found.id} expired unanswered")
    if found.status != PENDING:
        raise ApprovalError(f"approval {found.id} is {found.status}, not pending")
    return found


class StoreUnavailable(StoreError):
    """The state store cannot be reached right now (a shared store's server is down): writes
    are refused with ``state_unavailable`` until it is back."""


class StoreBusy(StoreError):
    """An admission that would have to wait (another writer holds the store): nothing was
    taken; make it where waiting is allowed, off the event loop."""


#: The reason code of a write refused because the state store cannot be reached.
STATE_UNAVAILABLE = "state_unavailable"


def new_canary() -> str:
    """A token no legitimate text contains by accident, shaped like a forge token."""
    return "gvc_" + secrets.token_hex(16)


class Store(ABC):
    """Budget windows, counters, run-state flags and canary tokens."""

    #: Calls that failed on the store's side (a shared store's server unreachable), for metrics.
    errors: int = 0
    #: :meth:`admit_async` never blocks the event loop: a network client driven by the loop.
    #: False (the default): :meth:`admit` blocks (a file lock, a socket), so the proxy calls it
    #: on a worker thread and never calls :meth:`admit_async`.
    admits_on_loop: bool = False

    @abstractmethod
    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        """Consume ``amounts[i]`` units (default one) from every ``(key, limit)`` sliding
        window, all or nothing: a request that performs three writes takes three.

        Returns None when taken, else the seconds until the fullest window has room (the
        whole window when an amount exceeds its limit and can never fit).
        """

    def admit(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
              amounts: Sequence[int] | None = None) -> Admission:
        """:meth:`take`, only if the run-time flags are still ``seen`` (every kind of
        :data:`FLAG_KINDS`), in one step: the proxy decides a budgeted write on the flags it
        read last and lets this one round trip both confirm them and take the budget, so a
        pause committed before the take is never missed and one committed after it orders
        after the write. A store whose flags and windows live elsewhere than one lock or
        transaction may reach overrides it; this default (two calls) serves tests."""
        current = self.all_flags()
        if flags_differ(current, seen):
            return Admission(None, current)
        return Admission(self.take(keys, now, window, amounts))

    async def admit_async(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
                          amounts: Sequence[int] | None = None) -> Admission:
        """:meth:`admit`, awaited on the event loop without blocking it: the same answer on the
        same data, the same errors (:class:`StoreUnavailable` within the store's timeout, the
        loop serving other requests meanwhile), or :class:`StoreBusy` at once where answering
        would mean waiting (a SQLite file another writer holds: then :meth:`admit` runs on a
        worker thread). Only a store whose :attr:`admits_on_loop` is True provides it; the
        others raise NotImplementedError (their :meth:`admit` runs on a worker thread instead)."""
        raise NotImplementedError(f"{type(self).__name__} does not admit on the event loop; call admit on a worker thread")

    def all_flags(self) -> dict[str, frozenset[str]]:
        """Every kind's flagged repositories (:data:`FLAG_KINDS`), in one round trip where the store allows."""
        return {kind: self.flags(kind) for kind in FLAG_KINDS}

    @abstractmethod
    def give_back(self, keys: Sequence[str], at: float, amounts: Sequence[int]) -> None:
        """Return what :meth:`take` took at ``at`` (a write the forge never performed: the send
        failed, or the forge refused it), ``amounts[i]`` units to window ``keys[i]``."""

    @abstractmethod
    def count(self, key: str, amount: int = 1) -> None:
        """Add to a monotonic counter (write counters: what agents asked for, per operation)."""

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Every counter's value."""

    @abstractmethod
    def flags(self, kind: str) -> frozenset[str]:
        """Repositories flagged ``kind`` (lower-case ``owner/name``)."""

    @abstractmethod
    def set_flag(self, kind: str, repo: str, on: bool) -> None:
        """Flag or unflag a repository at run time, beside what the policy file says."""

    @abstractmethod
    def canary(self, agent: str) -> str:
        """The canary token issued to ``agent``; issued on first use and kept."""

    @abstractmethod
    def canaries(self) -> dict[str, str]:
        """Every issued token → the agent it was issued to."""

    @abstractmethod
    def usage(self, key: str, now: float, window: float) -> int:
        """Units of the sliding window ``key`` in use at ``now`` (nothing is taken)."""

    # -- approvals ------------------------------------------------------------------------

    @abstractmethod
    def stage(self, approval: Approval, now: float) -> Approval:
        """Keep ``approval`` unless one of the same fingerprint stands; return the one that stands.

        An expired one (past its expiry, or marked by :meth:`expire`) is returned once more,
        so the caller refuses with ``approval_expired``; after that, as after a failed send,
        ``approval`` replaces it."""

    @abstractmethod
    def approval(self, approval_id: str) -> Approval | None:
        """One approval by id (case-insensitive)."""

    @abstractmethod
    def approvals(self, statuses: Collection[str] | None = None, limit: int = 200) -> list[Approval]:
        """Approvals, newest first, optionally only those in ``statuses``."""

    @abstractmethod
    def decide(self, approval_id: str, *, approve: bool, by: str, reason: str | None, now: float) -> Approval:
        """``pending → approved`` or ``→ rejected``, recording who and why; ApprovalError otherwise."""

    @abstractmethod
    def claim(self, now: float) -> Approval | None:
        """The oldest approved approval, moved to ``sending`` atomically: one sender gets it."""

    @abstractmethod
    def finish(self, approval_id: str, *, sent: bool, status: int | None, content_type: str | None, body: bytes,
               now: float, reason: str | None = None) -> Approval:
        """``sending → sent`` (the upstream's answer) or ``→ failed`` (a gate refused it: ``reason``)."""

    @abstractmethod
    def expire(self, now: float) -> list[Approval]:
        """Mark every pending approval past its expiry expired; return them."""

    @abstractmethod
    def annotate(self, approval_id: str, key: str, value: str) -> None:
        """Keep a note on an approval under ``key`` (the forge's context, the notifications'
        delivery state), replacing the key's last one. Never changes the approval's status."""

    @abstractmethod
    def annotations(self, approval_id: str) -> dict[str, str]:
        """Every note kept on an approval (none: empty)."""

    def add_tally(self, counts: dict[str, int], refusals: Sequence[str],  # noqa: B027 - optional
                  timed: Mapping[tuple[int, str], int] | None = None) -> None:
        """Add one replica's decision counts, its latest refusals (JSON, oldest first) and its
        counts per :data:`TALLY_SLOT` (``(slot start, series) → n``, for the decisions-over-time
        chart) to the cluster's (:mod:`gitvow_proxy.cluster_view`). The default keeps none: a
        store of one process has one audit log, which is read instead."""

    def tally(self) -> tuple[dict[str, int], list[dict[str, object]]] | None:
        """Every replica's decision counts and latest refusals (newest first); None when the
        store keeps none (then the audit log is the view)."""
        return None

    def timeline(self, width: int, first: int, buckets: int) -> dict[str, list[int]] | None:
        """Every replica's decisions per series in ``buckets`` buckets of ``width`` seconds (one
        of :data:`TIMELINE`'s), the first starting at ``first`` (a multiple of ``width``); None
        when the store keeps none (then the audit log is the view)."""
        return None

    def epoch(self) -> float | None:
        """When the records this store holds began (a shared store's server, on its clock): a
        store restarted empty has a later one, so a replica that saw an earlier one knows records
        were lost. None: the store cannot lose its records apart from the proxy (a file, memory)."""
        return None

    def pending_approvals(self) -> int:
        """How many approvals wait for a human (for metrics)."""
        return len(self.approvals([PENDING], limit=1 << 30))

    def close(self) -> None:  # noqa: B027 - optional: only stores holding files override it
        """Release files; the default holds none."""


def flags_differ(current: Flags, seen: Flags) -> bool:
    """Whether two readings of the run-time flags disagree on any kind."""
    return any(current.get(kind, frozenset()) != seen.get(kind, frozenset()) for kind in FLAG_KINDS)


def retry_after(events: Sequence[float], limit: int, now: float, window: float, amount: int = 1) -> float:
    """Seconds until the window holding ``events`` (sorted, inside the window) has room for ``amount``."""
    if limit <= 0 or amount > limit or not events:
        return window
    oldest_blocking = events[len(events) + amount - 1 - limit]
    return max(0.0, oldest_blocking + window - now)


def budget_amounts(keys: Sequence[tuple[str, int]], amounts: Sequence[int] | None) -> list[int]:
    """One positive amount per budget key (one each when ``amounts`` is None); ValueError otherwise."""
    if amounts is None:
        return [1] * len(keys)
    if len(amounts) != len(keys) or any(a < 1 for a in amounts):
        raise ValueError("one positive amount per budget key")
    return list(amounts)
