"""The proxy's state store: one interface (:mod:`.interface`), three implementations.

:class:`MemoryStore` for tests and throwaway runs, :class:`SQLiteStore` as the embedded
default, ``RedisStore`` (:mod:`.redis_store`, imported only when named, since it pulls in
redis-py) for several replicas sharing one state. :func:`open_store` picks one from the
``[proxy] state`` value.
"""

from __future__ import annotations

from gitvow_proxy.store.interface import (
    AUTO_MERGE_OFF,
    FLAG_KINDS,
    PAUSED,
    STATE_UNAVAILABLE,
    TOLD_EXPIRED,
    Admission,
    ApprovalError,
    Flags,
    Store,
    StoreBusy,
    StoreError,
    StoreUnavailable,
    new_canary,
)
from gitvow_proxy.store.memory_store import MemoryStore
from gitvow_proxy.store.sqlite_store import SQLiteStore


def is_shared(spec: str) -> bool:
    """Whether ``spec`` names a server shared by replicas rather than a file or memory."""
    return spec.startswith(("redis://", "rediss://"))


def open_store(spec: str, *, password: str | None = None, ca_file: str | None = None) -> Store:
    """``:memory:`` → :class:`MemoryStore`; ``redis://``/``rediss://`` → ``RedisStore``
    (``password`` and ``ca_file`` apply only there); anything else is a SQLite file path."""
    if spec == ":memory:":
        return MemoryStore()
    if is_shared(spec):
        from gitvow_proxy.store.redis_store import RedisStore

        return RedisStore(spec, password=password, ca_file=ca_file)
    return SQLiteStore(spec)


__all__ = [
    "AUTO_MERGE_OFF", "FLAG_KINDS", "PAUSED", "STATE_UNAVAILABLE", "TOLD_EXPIRED", "Admission", "ApprovalError", "Flags",
    "MemoryStore",
    "SQLiteStore", "Store", "StoreBusy", "StoreError", "StoreUnavailable", "is_shared", "new_canary", "open_store",
]
