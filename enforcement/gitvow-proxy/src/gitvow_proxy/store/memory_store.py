"""The state store in process memory: for tests and throwaway runs; lost on restart."""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Collection, Sequence

from gitvow_proxy.approvals import APPROVED, EXPIRED, FAILED, PENDING, REJECTED, RESTAGE, SENDING, SENT, Approval
from gitvow_proxy.store.interface import (
    FLAG_KINDS,
    Admission,
    ApprovalError,
    Flags,
    Store,
    budget_amounts,
    check_decidable,
    flags_differ,
    new_canary,
    retry_after,
    tell_expired,
)


class MemoryStore(Store):
    """Everything in process memory; lost on restart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, deque[float]] = defaultdict(deque)
        self._counters: dict[str, int] = defaultdict(int)
        self._flags: dict[str, set[str]] = defaultdict(set)
        self._canaries: dict[str, str] = {}
        self._approvals: dict[str, Approval] = {}
        self._notes: dict[str, dict[str, str]] = {}

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        units = budget_amounts(keys, amounts)
        with self._lock:
            return self._take(keys, units, now, window)

    #: Memory under a lock held for microseconds: nothing to wait for.
    admits_on_loop = True

    async def admit_async(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
                          amounts: Sequence[int] | None = None) -> Admission:
        return self.admit(seen, keys, now, window, amounts)

    def admit(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
              amounts: Sequence[int] | None = None) -> Admission:
        units = budget_amounts(keys, amounts)
        with self._lock:
            current = self._all_flags()
            if flags_differ(current, seen):
                return Admission(None, current)
            return Admission(self._take(keys, units, now, window))

    def _take(self, keys: Sequence[tuple[str, int]], units: list[int], now: float, window: float) -> float | None:
        """:meth:`take` under the lock."""
        if any(limit <= 0 or amount > limit for (_, limit), amount in zip(keys, units, strict=True)):
            return window
        wait = 0.0
        full = False
        for (key, limit), amount in zip(keys, units, strict=True):
            events = self._events[key]
            while events and events[0] <= now - window:
                events.popleft()
            if len(events) + amount > limit:
                full = True
                wait = max(wait, retry_after(list(events), limit, now, window, amount))
        if full:
            return max(wait, 1.0)
        for (key, _), amount in zip(keys, units, strict=True):
            self._events[key].extend([now] * amount)
        return None

    def give_back(self, keys: Sequence[str], at: float, amounts: Sequence[int]) -> None:
        with self._lock:
            for key, amount in zip(keys, amounts, strict=True):
                events = self._events[key]
                for _ in range(amount):
                    if at in events:
                        events.remove(at)

    def count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counters[key] += amount

    def counters(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counters)

    def flags(self, kind: str) -> frozenset[str]:
        with self._lock:
            return frozenset(self._flags[kind])

    def all_flags(self) -> dict[str, frozenset[str]]:
        with self._lock:
            return self._all_flags()

    def _all_flags(self) -> dict[str, frozenset[str]]:
        return {kind: frozenset(self._flags[kind]) for kind in FLAG_KINDS}

    def set_flag(self, kind: str, repo: str, on: bool) -> None:
        with self._lock:
            (self._flags[kind].add if on else self._flags[kind].discard)(repo.lower())

    def canary(self, agent: str) -> str:
        with self._lock:
            return self._canaries.setdefault(agent, new_canary())

    def canaries(self) -> dict[str, str]:
        with self._lock:
            return {token: agent for agent, token in self._canaries.items()}

    def usage(self, key: str, now: float, window: float) -> int:
        with self._lock:
            return sum(1 for at in self._events.get(key, ()) if at > now - window)

    def stage(self, approval: Approval, now: float) -> Approval:
        with self._lock:
            latest = max((a for a in self._approvals.values() if a.fingerprint == approval.fingerprint),
                         key=lambda a: a.created, default=None)
            told = tell_expired(latest, now)
            if told is not None:
                self._approvals[told.id] = told
                return told
            if latest is not None and latest.status not in RESTAGE:
                return latest
            self._approvals[approval.id] = approval = approval.with_(updated=now)
            return approval

    def approval(self, approval_id: str) -> Approval | None:
        with self._lock:
            return self._approvals.get(approval_id.upper())

    def approvals(self, statuses: Collection[str] | None = None, limit: int = 200) -> list[Approval]:
        with self._lock:
            found = [a for a in self._approvals.values() if statuses is None or a.status in statuses]
        return sorted(found, key=lambda a: a.created, reverse=True)[:limit]

    def decide(self, approval_id: str, *, approve: bool, by: str, reason: str | None, now: float) -> Approval:
        with self._lock:
            found = check_decidable(self._approvals.get(approval_id.upper()), approval_id, now)
            decided = found.with_(status=APPROVED if approve else REJECTED, decided_by=by, decided_at=now,
                                  reason=reason, updated=now)
            self._approvals[found.id] = decided
            return decided

    def claim(self, now: float) -> Approval | None:
        with self._lock:
            ready = sorted((a for a in self._approvals.values() if a.status == APPROVED), key=lambda a: a.created)
            if not ready:
                return None
            claimed = self._approvals[ready[0].id] = ready[0].with_(status=SENDING, updated=now)
            return claimed

    def finish(self, approval_id: str, *, sent: bool, status: int | None, content_type: str | None, body: bytes,
               now: float, reason: str | None = None) -> Approval:
        with self._lock:
            found = self._approvals.get(approval_id.upper())
            if found is None or found.status != SENDING:
                raise ApprovalError(f"approval {approval_id} is not being sent")
            done = found.with_(status=SENT if sent else FAILED, sent_at=now, response_status=status,
                               response_type=content_type, response_body=body, updated=now,
                               reason=reason if reason is not None else found.reason)
            self._approvals[found.id] = done
            return done

    def annotate(self, approval_id: str, key: str, value: str) -> None:
        with self._lock:
            self._notes.setdefault(approval_id.upper(), {})[key] = value

    def annotations(self, approval_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._notes.get(approval_id.upper(), {}))

    def expire(self, now: float) -> list[Approval]:
        with self._lock:
            gone = [a for a in self._approvals.values() if a.status == PENDING and a.expires <= now]
            for a in gone:
                self._approvals[a.id] = a.with_(status=EXPIRED, updated=now)
            return [self._approvals[a.id] for a in gone]
