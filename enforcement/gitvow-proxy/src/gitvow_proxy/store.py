"""Where the proxy keeps what must outlive one request: budget windows, write counters,
run-state flags and the canary tokens it issued.

One small interface, three implementations: :class:`MemoryStore` for tests and throwaway
runs, :class:`SQLiteStore` as the embedded default so a restart does not hand every agent a
fresh write budget (or a fresh canary token the old environment never saw), and
``gitvow_proxy.redis_store.RedisStore`` for several replicas sharing one state.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Sequence
from pathlib import Path

from gitvow.errors import GitvowError

#: Run-state flag kinds: a repository paused, a repository whose auto-merge is off.
PAUSED = "paused"
AUTO_MERGE_OFF = "auto_merge_off"
FLAG_KINDS = (PAUSED, AUTO_MERGE_OFF)


class StoreError(GitvowError):
    """The state store cannot be opened or used; names the path."""


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
    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float) -> float | None:
        """Consume one unit from every ``(key, limit)`` sliding window, all or nothing.

        Returns None when taken, else the seconds until the fullest window has room.
        """

    def usage(self, key: str, now: float, window: float) -> int:
        """Events inside ``key``'s sliding window (what the budget has used), for metrics."""
        return 0

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

    def close(self) -> None:  # noqa: B027 - optional: only stores holding files override it
        """Release files; the default holds none."""


def _retry_after(events: Sequence[float], limit: int, now: float, window: float) -> float:
    """Seconds until the window holding ``events`` (sorted, inside the window) drops below ``limit``."""
    if limit <= 0 or not events:
        return window
    oldest_blocking = events[len(events) - limit]
    return max(0.0, oldest_blocking + window - now)


class MemoryStore(Store):
    """Everything in process memory; lost on restart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, deque[float]] = defaultdict(deque)
        self._counters: dict[str, int] = defaultdict(int)
        self._flags: dict[str, set[str]] = defaultdict(set)
        self._canaries: dict[str, str] = {}

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float) -> float | None:
        if any(limit <= 0 for _, limit in keys):
            return window
        with self._lock:
            wait = 0.0
            full = False
            for key, limit in keys:
                events = self._events[key]
                while events and events[0] <= now - window:
                    events.popleft()
                if len(events) >= limit:
                    full = True
                    wait = max(wait, _retry_after(list(events), limit, now, window))
            if full:
                return max(wait, 1.0)
            for key, _ in keys:
                self._events[key].append(now)
            return None

    def usage(self, key: str, now: float, window: float) -> int:
        with self._lock:
            return sum(1 for at in self._events.get(key, ()) if at > now - window)

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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (key TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS events_key_at ON events (key, at);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS flags (kind TEXT NOT NULL, repo TEXT NOT NULL, PRIMARY KEY (kind, repo));
CREATE TABLE IF NOT EXISTS canaries (agent TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE);
"""


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

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float) -> float | None:
        if any(limit <= 0 for _, limit in keys):
            return window
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                wait = 0.0
                full = False
                for key, limit in keys:
                    db.execute("DELETE FROM events WHERE key = ? AND at <= ?", (key, now - window))
                    rows = db.execute(
                        "SELECT at FROM events WHERE key = ? ORDER BY at DESC LIMIT ?", (key, limit)
                    ).fetchall()
                    if len(rows) >= limit:
                        full = True
                        wait = max(wait, _retry_after([r[0] for r in reversed(rows)], limit, now, window))
                if full:
                    db.execute("COMMIT")
                    return max(wait, 1.0)
                db.executemany("INSERT INTO events (key, at) VALUES (?, ?)", [(key, now) for key, _ in keys])
                db.execute("COMMIT")
                return None
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def usage(self, key: str, now: float, window: float) -> int:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM events WHERE key = ? AND at > ?", (key, now - window)).fetchone()
            return int(row[0])

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

    def close(self) -> None:
        with self._lock:
            self._db.close()


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
