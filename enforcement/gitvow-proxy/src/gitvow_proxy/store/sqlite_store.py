"""The embedded default state store: one SQLite file (WAL), shared by the proxy and the
commands on one machine, so a restart does not hand every agent a fresh write budget (or a
fresh canary token the old environment never saw).

Durability: WAL with ``synchronous=NORMAL``. Every committed transaction survives a crash or
kill of the proxy (the WAL is in the operating system's hands at commit); only a power loss
or kernel crash can lose the last transactions before a checkpoint, which costs at most some
budget units taken in the last moments (a fresh allowance, never a lost refusal record that
matters more than the forge's own). Budget admissions are the proxy's own
(:mod:`.sqlite_budget`): decided from its memory of the file while no other connection
committed, written in batches, and otherwise one ``BEGIN IMMEDIATE`` transaction whose cost
does not grow with the window: the units in use are kept per window (``windows``, maintained
by triggers on ``events`` so every writer keeps it exact)."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Collection, Sequence
from pathlib import Path

from gitvow_proxy.approvals import APPROVED, EXPIRED, FAILED, PENDING, REJECTED, RESTAGE, SENDING, SENT, Approval
from gitvow_proxy.store.interface import (
    Admission,
    ApprovalError,
    Flags,
    Store,
    StoreError,
    budget_amounts,
    check_decidable,
    new_canary,
    tell_expired,
)
from gitvow_proxy.store.sqlite_budget import SQLiteBudget, all_flags

log = logging.getLogger("gitvow_proxy")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS events_key_at ON events (key, at);
CREATE TABLE IF NOT EXISTS windows (key TEXT PRIMARY KEY, n INTEGER NOT NULL);
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

# The units in use per window, kept by the database itself whoever writes ``events``. Created
# once, with the count of what is there, in the transaction that creates the triggers.
_WINDOWS = (
    "DELETE FROM windows",
    "INSERT INTO windows (key, n) SELECT key, COUNT(*) FROM events GROUP BY key",
    """CREATE TRIGGER events_added AFTER INSERT ON events BEGIN
        INSERT INTO windows (key, n) VALUES (new.key, 1) ON CONFLICT(key) DO UPDATE SET n = n + 1;
    END""",
    """CREATE TRIGGER events_removed AFTER DELETE ON events BEGIN
        UPDATE windows SET n = n - 1 WHERE key = old.key;
    END""",
)

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


#: The files SQLite keeps beside the database: they hold the same data (the WAL holds every
#: recent write: staged bodies, canaries) until a checkpoint.
_COMPANIONS = ("-wal", "-shm", "-journal")


def _private(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it, and make an existing one and its
    companions 0600. SQLite creates its WAL, shared-memory and journal files with the mode of
    the database file, so none of them is ever readable by others, not even for the moment
    between its creation and a chmod."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in _COMPANIONS:
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            os.chmod(companion, 0o600)


class SQLiteStore(Store):
    """One SQLite file (WAL), safe to share between the proxy and ``gitvow env``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _private(self.path)
            self._db = self._connect(timeout=10.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            self._keep_windows()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the state store {self.path}: {exc}") from None
        self._lock = threading.Lock()
        #: The budget's admissions, on a connection of their own (:mod:`.sqlite_budget`).
        self._budget = SQLiteBudget(self.path, self._connect, self._checkpoint)

    def _connect(self, timeout: float) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=timeout)
        db.execute("PRAGMA synchronous=NORMAL")  # per connection: with WAL, commits append and never sync
        return db

    def _keep_windows(self) -> None:
        """The ``windows`` counts and their triggers, made once (a file from before them is counted)."""
        db = self._db
        if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'events_removed'").fetchone():
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'events_removed'").fetchone():
                for statement in _WINDOWS:
                    db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        return self._budget.admit_waiting(None, keys, budget_amounts(keys, amounts), now, window).wait

    def admit(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
              amounts: Sequence[int] | None = None) -> Admission:
        return self._budget.admit_waiting(seen, keys, budget_amounts(keys, amounts), now, window)

    #: An admission of the event loop never waits: see :meth:`admit_async`.
    admits_on_loop = True

    async def admit_async(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
                          amounts: Sequence[int] | None = None) -> Admission:
        """:meth:`admit` without waiting, for the event loop: from the proxy's memory of the
        file when no other connection committed since its last transaction, the units taken
        written with the next batch; else one transaction on a connection of its own that
        never waits for a lock (busy timeout 0) and never checkpoints, raising
        :class:`StoreBusy` at once, nothing taken, when another writer holds the file (the
        caller then admits with :meth:`admit` off the loop). See :mod:`.sqlite_budget`."""
        return self._budget.admit_now(seen, keys, budget_amounts(keys, amounts), now, window)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database (a thread of its own; the admissions' connection never does)."""
        try:
            with self._lock:
                self._db.execute("PRAGMA wal_checkpoint(RESTART)")
        except sqlite3.Error as exc:  # the next one tries again; SQLite's own checkpoints go on meanwhile
            log.warning("gitvow: a checkpoint of the state store %s failed: %s", self.path, exc)

    def give_back(self, keys: Sequence[str], at: float, amounts: Sequence[int]) -> None:
        self._budget.give_back(keys, at, amounts)

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

    def all_flags(self) -> dict[str, frozenset[str]]:
        with self._lock:
            return self._all_flags()

    def _all_flags(self) -> dict[str, frozenset[str]]:
        return all_flags(self._db)

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
        return int(row[0]) + self._budget.pending(key, now - window)  # and the units not written yet

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
            told = tell_expired(latest, now)
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
            found = check_decidable(self._get(approval_id), approval_id, now)
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
        self._budget.close()  # the units still in memory written first
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
