"""The SQLite store's budget admissions: decided in the proxy's memory, written in batches.

Why: one transaction per write (``BEGIN IMMEDIATE``, the flags read, the window trimmed,
counted and appended to, ``COMMIT``) cost a budgeted write about 0.3 ms of the proxy's CPU
under load, more than everything else gitvow decides for it. A SQLite state file belongs to
one proxy (replicas share Redis; the commands that open the file pause, resume, issue
canaries and read, but never take from a budget), so that proxy can keep the budget itself:

- it remembers, from its last transaction, the run-time flags and the units in use of each
  window, with the file's ``PRAGMA data_version`` then. That number changes when any other
  connection commits (a ``gitvow pause``, the desk, the store's own worker), so an
  admission that finds it unchanged knows its memory is the file's, and reading it costs a
  few microseconds, no lock and no transaction. The pragma is SQLite's documented way to ask
  this; how a storage backend records commits (the WAL index in the ``-shm`` file) is left
  to that backend, so nothing here reads it;
- such an admission compares the flags and takes the units in memory. The units it takes are
  written with the next batch (at most :data:`FLUSH_SECONDS` later, one transaction for all
  of them); until then they count in memory, so this proxy never admits past a limit;
- anything else is decided exactly as before, in one transaction that first writes the
  batch: the file changed, a window not seen yet, a window that looks full (the memory keeps
  counting units that left the window since the last transaction, so it may only refuse too
  early, never admit too much: the transaction trims and decides), a batch that could not
  be written.

So a pause committed before an admission refuses it, as before. What changes: a crash of the
proxy (``kill -9``) can forget the units of its last :data:`FLUSH_SECONDS` (a graceful stop
writes them), and two proxies sharing one file each see the other's units only once written.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from gitvow_proxy.store.interface import FLAG_KINDS, Admission, Flags, StoreBusy, StoreError, flags_differ

log = logging.getLogger("gitvow_proxy")

T = TypeVar("T")

#: How long an admitted unit may wait in memory before its batch is written.
FLUSH_SECONDS = 0.02
#: Units waiting to be written beyond which an admission waits for the transaction instead
#: (a file that cannot be written stops the admissions it would have to hold).
PENDING_LIMIT = 1024
#: Transactions on the admissions' connection between two checkpoints of the WAL (SQLite's
#: own automatic checkpoint is every 1,000 pages; a transaction writes two to four).
CHECKPOINT_EVERY = 200
#: How long an admission made off the event loop waits for another writer of the file.
BUSY_SECONDS = 10.0


@dataclass
class _View:
    """The file as this proxy's last transaction left it, plus what it admitted since."""

    version: int
    flags: Flags
    used: dict[str, int]


class SQLiteBudget:
    """Budget admissions on one connection of their own, under one lock (see the module)."""

    def __init__(self, path: Path, connect: Callable[[float], sqlite3.Connection],
                 checkpoint: Callable[[], None]) -> None:
        self.path = path
        self._connect = connect
        self._checkpoint = checkpoint
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._view: _View | None = None
        #: Units admitted and not written yet: ``(key, at)`` each.
        self._pending: list[tuple[str, float]] = []
        #: The window of each key admitted (the batch trims what left it).
        self._windows: dict[str, float] = {}
        self._flush: asyncio.TimerHandle | None = None
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        self._transactions = 0
        self._closed = False

    # -- on the event loop ---------------------------------------------------------------------

    def admit_now(self, seen: Flags | None, keys: Sequence[tuple[str, int]], units: Sequence[int], now: float,
                  window: float) -> Admission:
        """An admission that never waits, for the event loop: from memory when the file did not
        change, else one transaction that raises :class:`StoreBusy` at once when another
        writer holds the file. A batch to write is scheduled on the running loop."""
        if not self._lock.acquire(blocking=False):
            raise StoreBusy(f"the state store {self.path} is in use by another admission")
        try:
            db = self._connection()
            admission = self._remembered(db, seen, keys, units, now, window)
            if admission is None:
                admission = self._transaction(db, seen, keys, units, now, window)
        finally:
            self._lock.release()
        loop = asyncio.get_running_loop()
        if self._pending and (self._flush is None or self._flush_loop is not loop):
            self._flush, self._flush_loop = loop.call_later(FLUSH_SECONDS, self._write_batch), loop
        return admission

    def _remembered(self, db: sqlite3.Connection, seen: Flags | None, keys: Sequence[tuple[str, int]],
                    units: Sequence[int], now: float, window: float) -> Admission | None:
        """The admission from memory, or None when only a transaction can make it."""
        view = self._view
        if view is None or len(self._pending) >= PENDING_LIMIT or _data_version(db) != view.version:
            return None
        used = view.used
        if any(key not in used for key, _ in keys):
            return None
        if seen is not None and flags_differ(view.flags, seen):
            return Admission(None, view.flags)
        if not all(limit > 0 and used[key] + amount <= limit for (key, limit), amount in zip(keys, units, strict=True)):
            return None  # full, or looks full: the transaction trims and decides
        for (key, _), amount in zip(keys, units, strict=True):
            used[key] += amount
            self._windows[key] = window
            self._pending.extend([(key, now)] * amount)
        return Admission(None)

    def _write_batch(self) -> None:
        """The loop's timer: the units admitted since the last transaction written in one."""
        self._flush = None
        if self._closed or not self._pending:
            return
        if not self._lock.acquire(blocking=False):
            self._flush = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self._write_batch)
            return
        try:
            self._transaction(self._connection(), None, (), (), 0.0, 0.0)
        except StoreBusy:  # another writer holds the file: kept in memory (up to PENDING_LIMIT), tried again
            pass
        except StoreError as exc:  # kept in memory and tried again; admissions meanwhile take the transaction
            self._view = None
            log.warning("gitvow: the budget's last units could not be written yet: %s", exc)
        finally:
            self._lock.release()
        if self._pending:
            self._flush = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self._write_batch)

    # -- anywhere else (worker threads, commands) ----------------------------------------------

    def admit_waiting(self, seen: Flags | None, keys: Sequence[tuple[str, int]], units: Sequence[int], now: float,
                      window: float) -> Admission:
        """An admission that may wait for another writer of the file (off the event loop)."""
        with self._lock:
            return self._waiting(lambda db: self._transaction(db, seen, keys, units, now, window))

    def give_back(self, keys: Sequence[str], at: float, amounts: Sequence[int]) -> None:
        """Units taken at ``at`` returned: those still in memory dropped, the others deleted."""
        with self._lock:
            owed: list[tuple[str, int]] = []
            for key, amount in zip(keys, amounts, strict=True):
                for _ in range(amount):
                    try:
                        self._pending.remove((key, at))
                    except ValueError:
                        owed.append((key, 1))
                        continue
                    if self._view is not None and key in self._view.used:
                        self._view.used[key] -= 1
            if owed:
                self._view = None  # the units in use read afresh by the next admission
                self._waiting(lambda db: _delete(db, owed, at))

    def pending(self, key: str, since: float) -> int:
        """Units of ``key`` admitted after ``since`` and not written yet."""
        return sum(1 for k, at in list(self._pending) if k == key and at > since)

    def close(self) -> None:
        """Write what is still in memory (a graceful stop loses nothing), then let go of the file."""
        with self._lock:
            if self._pending and not self._closed:
                try:
                    self._waiting(lambda db: self._transaction(db, None, (), (), 0.0, 0.0))
                except StoreError as exc:
                    log.error("gitvow: %d budget units could not be written at stop: %s", len(self._pending), exc)
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- the transaction -----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the state store {self.path} is closed")
        db = self._db
        if db is None:
            db = self._db = self._connect(0.0)
            db.execute("PRAGMA wal_autocheckpoint=0")  # a thread checkpoints (:meth:`_transaction`)
        return db

    def _waiting(self, run: Callable[[sqlite3.Connection], T]) -> T:
        db = self._connection()
        db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
        try:
            return run(db)
        finally:
            db.execute("PRAGMA busy_timeout=0")

    def _transaction(self, db: sqlite3.Connection, seen: Flags | None, keys: Sequence[tuple[str, int]],
                     units: Sequence[int], now: float, window: float) -> Admission:
        """One ``BEGIN IMMEDIATE`` transaction: the batch written, the flags compared with
        ``seen`` (when given), every window of ``keys`` trimmed, counted and, only if all have
        room, appended to; then the memory made the file's."""
        batch = list(self._pending)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                admission, view = _admission(db, batch, self._windows, seen, keys, units, now, window)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(f"the state store {self.path} is locked by another writer") from None
            raise StoreError(f"the state store {self.path} failed: {exc}") from None
        except sqlite3.Error as exc:
            raise StoreError(f"the state store {self.path} failed: {exc}") from None
        del self._pending[:len(batch)]
        old = self._view
        if old is not None and old.version == view.version:
            view.used = {**old.used, **view.used}
        self._view = view
        self._transactions += 1
        if self._transactions % CHECKPOINT_EVERY == 0:
            threading.Thread(target=self._checkpoint, name="gitvow-checkpoint", daemon=True).start()
        return admission


def _data_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA data_version").fetchone()[0])


def _admission(db: sqlite3.Connection, batch: Sequence[tuple[str, float]], windows: dict[str, float],
               seen: Flags | None, keys: Sequence[tuple[str, int]], units: Sequence[int], now: float,
               window: float) -> tuple[Admission, _View]:
    """In the transaction: what :meth:`SQLiteBudget._transaction` does, and the memory it leaves."""
    if batch:
        db.executemany("INSERT INTO events (key, at) VALUES (?, ?)", batch)
        latest: dict[str, float] = {}
        for key, at in batch:
            latest[key] = max(at, latest.get(key, at))
        for key, at in latest.items():
            db.execute("DELETE FROM events WHERE key = ? AND at <= ?", (key, at - windows.get(key, 0.0)))
    flags = all_flags(db)
    admission = Admission(None)
    if keys:
        if seen is not None and flags_differ(flags, seen):
            admission = Admission(None, flags)
        else:
            wait = fit(db, keys, units, now, window)
            if wait is None:
                db.executemany("INSERT INTO events (key, at) VALUES (?, ?)",
                               [(key, now) for (key, _), amount in zip(keys, units, strict=True) for _ in range(amount)])
            admission = Admission(wait)
    touched = {key for key, _ in batch} | {key for key, _ in keys}
    used = {key: _used(db, key) for key in touched}
    return admission, _View(_data_version(db), flags, used)


def _used(db: sqlite3.Connection, key: str) -> int:
    row = db.execute("SELECT n FROM windows WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row is not None else 0


def _delete(db: sqlite3.Connection, owed: Sequence[tuple[str, int]], at: float) -> None:
    for key, amount in owed:
        db.execute("DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE key = ? AND at = ? LIMIT ?)",
                   (key, at, amount))


def all_flags(db: sqlite3.Connection) -> dict[str, frozenset[str]]:
    """Every kind's flagged repositories, as the file holds them."""
    found: dict[str, set[str]] = {kind: set() for kind in FLAG_KINDS}
    for kind, repo in db.execute("SELECT kind, repo FROM flags"):
        found.setdefault(str(kind), set()).add(str(repo))
    return {kind: frozenset(repos) for kind, repos in found.items()}


def fit(db: sqlite3.Connection, keys: Sequence[tuple[str, int]], units: Sequence[int], now: float,
        window: float) -> float | None:
    """None when every window has room for its amount, else the seconds until the fullest
    does (in the transaction; the units in use are read from ``windows``, never counted)."""
    if any(limit <= 0 or amount > limit for (_, limit), amount in zip(keys, units, strict=True)):
        return window
    wait: float | None = None
    for (key, limit), amount in zip(keys, units, strict=True):
        db.execute("DELETE FROM events WHERE key = ? AND at <= ?", (key, now - window))
        used = _used(db, key)
        if used + amount > limit:
            # The unit whose leaving makes room: the (used + amount - limit)-th oldest.
            blocking = db.execute("SELECT at FROM events WHERE key = ? ORDER BY at LIMIT 1 OFFSET ?",
                                  (key, used + amount - 1 - limit)).fetchone()
            left = window if blocking is None else max(0.0, float(blocking[0]) + window - now)
            wait = max(wait or 0.0, left, 1.0)
    return wait


__all__ = ["CHECKPOINT_EVERY", "FLUSH_SECONDS", "PENDING_LIMIT", "SQLiteBudget", "all_flags", "fit"]
