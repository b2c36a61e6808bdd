"""Where the proxy keeps what must outlive one request: budget windows, write counters,
run-state flags, the canary tokens it issued and the approvals it staged.

One small interface, three implementations: :class:`MemoryStore` for tests and throwaway
runs, :class:`SQLiteStore` as the embedded default so a restart does not hand every agent a
fresh write budget (or a fresh canary token the old environment never saw). ``gitvow
approvals``, ``pause``, ``resume`` and ``status`` open the same store as the proxy: every
run-time control is a store operation, so a store shared between processes (SQLite here,
``gitvow_proxy.redis_store.RedisStore`` for several replicas sharing one state) is all
another implementation has to provide.

Approvals (:mod:`gitvow_proxy.approvals`) move through their statuses only by the atomic
operations below: :meth:`Store.stage` (never two live approvals of one request),
:meth:`Store.decide` (only a pending one), :meth:`Store.claim` (``approved → sending`` for
exactly one sender) and :meth:`Store.finish`.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Collection, Sequence
from pathlib import Path

from gitvow.errors import GitvowError
from gitvow_proxy.approvals import (
    APPROVED,
    EXPIRED,
    FAILED,
    PENDING,
    REJECTED,
    RESTAGE,
    SENDING,
    SENT,
    Approval,
)

#: Run-state flag kinds: a repository paused, a repository whose auto-merge is off.
PAUSED = "paused"
AUTO_MERGE_OFF = "auto_merge_off"
FLAG_KINDS = (PAUSED, AUTO_MERGE_OFF)


class StoreError(GitvowError):
    """The state store cannot be opened or used; names the path."""


class ApprovalError(GitvowError):
    """An approval that does not exist or is not in the status the operation needs."""


#: An expired approval's ``reason`` once the agent's retry was refused with approval_expired.
TOLD_EXPIRED = "expired unanswered; the agent was told"


def _tell_expired(latest: Approval | None, now: float) -> Approval | None:
    """An approval that expired (by now or by the sender's sweep) answers the agent's next
    identical request once with approval_expired; the one after that stages afresh."""
    if latest is None:
        return None
    if (latest.status == PENDING and latest.expires <= now) or (latest.status == EXPIRED and latest.reason != TOLD_EXPIRED):
        return latest.with_(status=EXPIRED, reason=TOLD_EXPIRED, updated=now)
    return None


def _check_decidable(found: Approval | None, approval_id: str, now: float) -> Approval:
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


#: The reason code of a write refused because the state store cannot be reached.
STATE_UNAVAILABLE = "state_unavailable"


def new_canary() -> str:
    """A token no legitimate text contains by accident, shaped like a forge token."""
    return "gvc_" + secrets.token_hex(16)


class Store(ABC):
    """Budget windows, counters, run-state flags and canary tokens."""

    #: Calls that failed on the store's side (a shared store's server unreachable), for metrics.
    errors: int = 0

    @abstractmethod
    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        """Consume ``amounts[i]`` units (default one) from every ``(key, limit)`` sliding
        window, all or nothing: a request that performs three writes takes three.

        Returns None when taken, else the seconds until the fullest window has room (the
        whole window when an amount exceeds its limit and can never fit).
        """

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

    def pending_approvals(self) -> int:
        """How many approvals wait for a human (for metrics)."""
        return len(self.approvals([PENDING], limit=1 << 30))

    def close(self) -> None:  # noqa: B027 - optional: only stores holding files override it
        """Release files; the default holds none."""


def _retry_after(events: Sequence[float], limit: int, now: float, window: float, amount: int = 1) -> float:
    """Seconds until the window holding ``events`` (sorted, inside the window) has room for ``amount``."""
    if limit <= 0 or amount > limit or not events:
        return window
    oldest_blocking = events[len(events) + amount - 1 - limit]
    return max(0.0, oldest_blocking + window - now)


def _amounts(keys: Sequence[tuple[str, int]], amounts: Sequence[int] | None) -> list[int]:
    if amounts is None:
        return [1] * len(keys)
    if len(amounts) != len(keys) or any(a < 1 for a in amounts):
        raise ValueError("one positive amount per budget key")
    return list(amounts)


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
        units = _amounts(keys, amounts)
        if any(limit <= 0 or amount > limit for (_, limit), amount in zip(keys, units, strict=True)):
            return window
        with self._lock:
            wait = 0.0
            full = False
            for (key, limit), amount in zip(keys, units, strict=True):
                events = self._events[key]
                while events and events[0] <= now - window:
                    events.popleft()
                if len(events) + amount > limit:
                    full = True
                    wait = max(wait, _retry_after(list(events), limit, now, window, amount))
            if full:
                return max(wait, 1.0)
            for (key, _), amount in zip(keys, units, strict=True):
                self._events[key].extend([now] * amount)
            return None

    def count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counters[key] += amount

    def counters(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counters)

    def flags(self, kind: str) -> frozenset[str]:
        with self._lock:
            return frozenset(self._flags[kind])

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
            told = _tell_expired(latest, now)
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
            found = _check_decidable(self._approvals.get(approval_id.upper()), approval_id, now)
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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS events_key_at ON events (key, at);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS flags (kind TEXT NOT NULL, repo TEXT NOT NULL, PRIMARY KEY (kind, repo));
CREATE TABLE IF NOT EXISTS canaries (agent TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, agent TEXT NOT NULL, operations TEXT NOT NULL,
    repo TEXT, adapter TEXT NOT NULL, method TEXT NOT NULL, url TEXT NOT NULL, headers TEXT NOT NULL,
    body BLOB NOT NULL, created REAL NOT NULL, expires REAL NOT NULL, status TEXT NOT NULL,
    decided_by TEXT, decided_at REAL, reason TEXT, sent_at REAL, response_status INTEGER,
    response_type TEXT, response_body BLOB NOT NULL, updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_fingerprint ON approvals (fingerprint, created);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, created);
CREATE TABLE IF NOT EXISTS approval_notes (id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (id, key));
"""

_APPROVAL_COLUMNS = (
    "id, fingerprint, agent, operations, repo, adapter, method, url, headers, body, created, expires, status, "
    "decided_by, decided_at, reason, sent_at, response_status, response_type, response_body, updated"
)


def _row(approval: Approval) -> tuple[object, ...]:
    a = approval
    return (a.id, a.fingerprint, a.agent, json.dumps(list(a.operations)), a.repo, a.adapter, a.method, a.url,
            json.dumps([list(h) for h in a.headers]), a.body, a.created, a.expires, a.status, a.decided_by,
            a.decided_at, a.reason, a.sent_at, a.response_status, a.response_type, a.response_body, a.updated)


def _approval(row: Sequence[object]) -> Approval:
    (id_, fp, agent, ops, repo, adapter, method, url, headers, body, created, expires, status, by, at, reason,
     sent_at, rstatus, rtype, rbody, updated) = row
    return Approval(
        id=str(id_), fingerprint=str(fp), agent=str(agent), operations=tuple(json.loads(str(ops))),
        repo=None if repo is None else str(repo), adapter=str(adapter), method=str(method), url=str(url),
        headers=tuple((str(k), str(v)) for k, v in json.loads(str(headers))), body=bytes(body),  # type: ignore[call-overload]
        created=float(created), expires=float(expires), status=str(status),  # type: ignore[arg-type]
        decided_by=None if by is None else str(by), decided_at=None if at is None else float(at),  # type: ignore[arg-type]
        reason=None if reason is None else str(reason), sent_at=None if sent_at is None else float(sent_at),  # type: ignore[arg-type]
        response_status=None if rstatus is None else int(rstatus),  # type: ignore[call-overload]
        response_type=None if rtype is None else str(rtype), response_body=bytes(rbody),  # type: ignore[call-overload]
        updated=float(updated),  # type: ignore[arg-type]
    )


class SQLiteStore(Store):
    """One SQLite file (WAL), safe to share between the proxy and ``gitvow env``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the state store {self.path}: {exc}") from None
        if os.name == "posix":
            os.chmod(self.path, 0o600)  # canary tokens live here
        self._lock = threading.Lock()

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        units = _amounts(keys, amounts)
        if any(limit <= 0 or amount > limit for (_, limit), amount in zip(keys, units, strict=True)):
            return window
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                wait = 0.0
                full = False
                for (key, limit), amount in zip(keys, units, strict=True):
                    db.execute("DELETE FROM events WHERE key = ? AND at <= ?", (key, now - window))
                    rows = db.execute(
                        "SELECT at FROM events WHERE key = ? ORDER BY at DESC LIMIT ?", (key, limit)
                    ).fetchall()
                    if len(rows) + amount > limit:
                        full = True
                        wait = max(wait, _retry_after([r[0] for r in reversed(rows)], limit, now, window, amount))
                if full:
                    db.execute("COMMIT")
                    return max(wait, 1.0)
                db.executemany("INSERT INTO events (key, at) VALUES (?, ?)",
                               [(key, now) for (key, _), amount in zip(keys, units, strict=True) for _ in range(amount)])
                db.execute("COMMIT")
                return None
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO counters (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = value + ?",
                (key, amount, amount),
            )

    def counters(self) -> dict[str, int]:
        with self._lock:
            return {k: v for k, v in self._db.execute("SELECT key, value FROM counters")}

    def flags(self, kind: str) -> frozenset[str]:
        with self._lock:
            return frozenset(r[0] for r in self._db.execute("SELECT repo FROM flags WHERE kind = ?", (kind,)))

    def set_flag(self, kind: str, repo: str, on: bool) -> None:
        with self._lock:
            if on:
                self._db.execute("INSERT OR IGNORE INTO flags (kind, repo) VALUES (?, ?)", (kind, repo.lower()))
            else:
                self._db.execute("DELETE FROM flags WHERE kind = ? AND repo = ?", (kind, repo.lower()))

    def canary(self, agent: str) -> str:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO canaries (agent, token) VALUES (?, ?)", (agent, new_canary()))
            row = self._db.execute("SELECT token FROM canaries WHERE agent = ?", (agent,)).fetchone()
            return str(row[0])

    def canaries(self) -> dict[str, str]:
        with self._lock:
            return {token: agent for agent, token in self._db.execute("SELECT agent, token FROM canaries")}

    def usage(self, key: str, now: float, window: float) -> int:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM events WHERE key = ? AND at > ?", (key, now - window)).fetchone()
            return int(row[0])

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def _get(self, approval_id: str) -> Approval | None:
        row = self._db.execute(f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE id = ?", (approval_id.upper(),)).fetchone()
        return None if row is None else _approval(row)

    def _put(self, approval: Approval) -> Approval:
        marks = ", ".join("?" * len(_APPROVAL_COLUMNS.split(",")))
        self._db.execute(f"INSERT OR REPLACE INTO approvals ({_APPROVAL_COLUMNS}) VALUES ({marks})", _row(approval))
        return approval

    def stage(self, approval: Approval, now: float) -> Approval:
        with self._transaction():
            row = self._db.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE fingerprint = ? ORDER BY created DESC LIMIT 1",
                (approval.fingerprint,),
            ).fetchone()
            latest = None if row is None else _approval(row)
            told = _tell_expired(latest, now)
            if told is not None:
                return self._put(told)
            if latest is not None and latest.status not in RESTAGE:
                return latest
            return self._put(approval.with_(updated=now))

    def approval(self, approval_id: str) -> Approval | None:
        with self._lock:
            return self._get(approval_id)

    def approvals(self, statuses: Collection[str] | None = None, limit: int = 200) -> list[Approval]:
        with self._lock:
            if statuses is None:
                rows = self._db.execute(
                    f"SELECT {_APPROVAL_COLUMNS} FROM approvals ORDER BY created DESC LIMIT ?", (limit,)).fetchall()
            else:
                wanted = list(statuses)
                marks = ", ".join("?" * len(wanted))
                rows = self._db.execute(
                    f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE status IN ({marks}) ORDER BY created DESC LIMIT ?",
                    (*wanted, limit),
                ).fetchall()
            return [_approval(r) for r in rows]

    def decide(self, approval_id: str, *, approve: bool, by: str, reason: str | None, now: float) -> Approval:
        with self._transaction():
            found = _check_decidable(self._get(approval_id), approval_id, now)
            return self._put(found.with_(status=APPROVED if approve else REJECTED, decided_by=by, decided_at=now,
                                         reason=reason, updated=now))

    def claim(self, now: float) -> Approval | None:
        with self._transaction():
            row = self._db.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE status = ? ORDER BY created LIMIT 1", (APPROVED,)
            ).fetchone()
            if row is None:
                return None
            return self._put(_approval(row).with_(status=SENDING, updated=now))

    def finish(self, approval_id: str, *, sent: bool, status: int | None, content_type: str | None, body: bytes,
               now: float, reason: str | None = None) -> Approval:
        with self._transaction():
            found = self._get(approval_id)
            if found is None or found.status != SENDING:
                raise ApprovalError(f"approval {approval_id} is not being sent")
            return self._put(found.with_(status=SENT if sent else FAILED, sent_at=now, response_status=status,
                                         response_type=content_type, response_body=body, updated=now,
                                         reason=reason if reason is not None else found.reason))

    def expire(self, now: float) -> list[Approval]:
        with self._transaction():
            rows = self._db.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE status = ? AND expires <= ?", (PENDING, now)
            ).fetchall()
            return [self._put(_approval(r).with_(status=EXPIRED, updated=now)) for r in rows]

    def annotate(self, approval_id: str, key: str, value: str) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO approval_notes (id, key, value) VALUES (?, ?, ?)",
                             (approval_id.upper(), key, value))

    def annotations(self, approval_id: str) -> dict[str, str]:
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM approval_notes WHERE id = ?", (approval_id.upper(),))
            return {str(k): str(v) for k, v in rows.fetchall()}

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` under the store's lock: one writer across processes."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def __enter__(self) -> None:
        self.store._lock.acquire()
        try:
            self.store._db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.store._lock.release()
            raise

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        try:
            self.store._db.execute("ROLLBACK" if kind is not None else "COMMIT")
        finally:
            self.store._lock.release()


def is_shared(spec: str) -> bool:
    """Whether ``spec`` names a server shared by replicas rather than a file or memory."""
    return spec.startswith(("redis://", "rediss://"))


def open_store(spec: str, *, password: str | None = None, ca_file: str | None = None) -> Store:
    """``:memory:`` → :class:`MemoryStore`; ``redis://``/``rediss://`` → ``RedisStore``
    (``password`` and ``ca_file`` apply only there); anything else is a SQLite file path."""
    if spec == ":memory:":
        return MemoryStore()
    if is_shared(spec):
        from gitvow_proxy.redis_store import RedisStore

        return RedisStore(spec, password=password, ca_file=ca_file)
    return SQLiteStore(spec)
