"""The SQLite store's admission on the event loop (``SQLiteStore.admit_async``): the same
answers as ``admit``, never a wait (another writer makes it raise ``StoreBusy`` at once, nothing
taken), and a WAL kept small by checkpoints made off the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from gitvow_proxy.store import (
    AUTO_MERGE_OFF,
    FLAG_KINDS,
    PAUSED,
    Admission,
    Flags,
    SQLiteStore,
    StoreBusy,
    sqlite_store,
)

NONE: Flags = {kind: frozenset() for kind in FLAG_KINDS}


def admit(store: SQLiteStore, seen: Flags, keys: Sequence[tuple[str, int]], now: float,
          amounts: Sequence[int] | None = None) -> Admission:
    return asyncio.run(store.admit_async(seen, keys, now, 60.0, amounts))


def test_the_loops_admission_answers_as_admit_does(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "state.sqlite")
    assert admit(store, NONE, [("w", 2)], 100.0) == Admission(None)
    store.set_flag(PAUSED, "Team/App", True)
    changed = admit(store, NONE, [("w", 2)], 101.0)
    assert changed.flags == {PAUSED: frozenset({"team/app"}), AUTO_MERGE_OFF: frozenset()}
    assert store.usage("w", 102.0, 60) == 1  # nothing taken
    assert admit(store, changed.flags, [("w", 2)], 102.0) == Admission(None)
    full = admit(store, changed.flags, [("w", 2)], 103.0)
    assert full.flags is None and full.wait == pytest.approx(57.0)
    assert admit(store, changed.flags, [("x", 3), ("w", 9)], 104.0, [4, 1]).wait == 60.0  # can never fit
    assert store.usage("x", 104.0, 60) == 0
    # What the loop's connection took, the store's own connection sees (one file, two connections).
    assert store.take([("w", 3)], 105.0, 60) is None and store.usage("w", 105.0, 60) == 3


def test_another_writer_makes_it_refuse_at_once_not_wait(tmp_path: Path) -> None:
    """A command (or the store's worker) holding the write lock: the admission raises StoreBusy
    without waiting for it (the blocking admit would wait its ten-second busy timeout) and takes
    nothing; once the lock is released it admits."""
    store = SQLiteStore(tmp_path / "state.sqlite")
    assert admit(store, NONE, [("w", 5)], 100.0) == Admission(None)
    other = sqlite3.connect(tmp_path / "state.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(StoreBusy, match="locked by another writer"):
        admit(store, NONE, [("w", 5)], 101.0)
    assert time.monotonic() - started < 5.0
    other.execute("ROLLBACK")
    assert store.usage("w", 101.0, 60) == 1
    assert admit(store, NONE, [("w", 5)], 102.0) == Admission(None)
    assert store.usage("w", 102.0, 60) == 2
    other.close()
    store.close()


def test_checkpoints_off_the_loop_keep_the_wal_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's connection never checkpoints (a checkpoint syncs the disk): a thread does,
    every CHECKPOINT_EVERY admissions. Without it the WAL would grow with every write."""

    def run(path: Path, every: int) -> int:
        monkeypatch.setattr(sqlite_store, "CHECKPOINT_EVERY", every)
        store = SQLiteStore(path)

        async def admissions() -> None:
            for i in range(600):
                try:
                    await store.admit_async(NONE, [("w", 10**6)], 1000.0 + i, 3600.0)
                except StoreBusy:  # the checkpoint holds writers for a moment: the worker's admit waits
                    store.admit(NONE, [("w", 10**6)], 1000.0 + i, 3600.0)
                await asyncio.sleep(0)

        asyncio.run(admissions())
        time.sleep(0.5)  # the last checkpoint thread
        assert store.usage("w", 1600.0, 3600) == 600
        size = path.with_name(path.name + "-wal").stat().st_size
        store.close()
        return size

    unchecked = run(tmp_path / "unchecked.sqlite", 10**9)
    checked = run(tmp_path / "checked.sqlite", 20)
    assert checked * 2 < unchecked, (checked, unchecked)
