"""The SQLite store's admission on the event loop (``SQLiteStore.admit_async``): the same
answers as ``admit``, never a wait (another writer makes it raise ``StoreBusy`` at once, nothing
taken), and a WAL kept small by checkpoints made off the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
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
    sqlite_budget,
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
    """A command (or the store's worker) holding the write lock: an admission that needs the
    file's transaction (a window not seen yet) raises StoreBusy without waiting for it (the
    blocking admit would wait its ten-second busy timeout) and takes nothing. One the proxy's
    memory can answer (the file unchanged since its last transaction) needs no lock at all:
    it is admitted and written once the other writer lets go."""
    store = SQLiteStore(tmp_path / "state.sqlite")
    assert admit(store, NONE, [("w", 5)], 100.0) == Admission(None)
    other = sqlite3.connect(tmp_path / "state.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(StoreBusy, match="locked by another writer"):
        admit(store, NONE, [("v", 5)], 101.0)
    assert time.monotonic() - started < 5.0
    assert admit(store, NONE, [("w", 5)], 101.0) == Admission(None)  # from memory
    other.execute("ROLLBACK")
    assert store.usage("v", 101.0, 60) == 0 and store.usage("w", 101.0, 60) == 2
    assert admit(store, NONE, [("v", 5)], 102.0) == Admission(None)
    assert store.usage("v", 102.0, 60) == 1
    other.close()
    store.close()
    assert SQLiteStore(tmp_path / "state.sqlite").usage("w", 102.0, 60) == 2  # written at close


def test_checkpoints_off_the_loop_keep_the_wal_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's connection never checkpoints (a checkpoint syncs the disk): a thread does,
    every CHECKPOINT_EVERY transactions. Without it the WAL would grow with every write."""

    def run(path: Path, every: int) -> int:
        monkeypatch.setattr(sqlite_budget, "CHECKPOINT_EVERY", every)
        monkeypatch.setattr(sqlite_budget, "FLUSH_SECONDS", 0.0)  # each unit written in a transaction of its own
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


# -- the proxy's memory of the file (gitvow_proxy.store.sqlite_budget) ---------------------------

def _admissions(store: SQLiteStore, calls: Sequence[tuple[Flags, Sequence[tuple[str, int]], float]],
                settle: float = 0.0) -> list[Admission]:
    """Admissions made one after another on one event loop, which then runs ``settle`` seconds
    more (long enough for the batch to be written when it is more than FLUSH_SECONDS)."""

    async def run() -> list[Admission]:
        found = [await store.admit_async(seen, keys, now, 60.0) for seen, keys, now in calls]
        await asyncio.sleep(settle)
        return found

    return asyncio.run(run())


def _in_file(path: Path, key: str) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM events WHERE key = ?", (key,)).fetchone()[0])
    finally:
        db.close()


def test_units_admitted_from_memory_reach_the_file_within_a_batch(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    found = _admissions(store, [(NONE, [("w", 10)], 100.0 + i) for i in range(5)])
    assert found == [Admission(None)] * 5
    assert _in_file(path, "w") == 1  # the first made the memory; four wait for the batch
    assert store.usage("w", 105.0, 60) == 5  # counted meanwhile
    _admissions(store, [(NONE, [("w", 10)], 106.0)], settle=sqlite_budget.FLUSH_SECONDS * 10)
    assert _in_file(path, "w") == 6  # the timer wrote them, in one transaction
    store.close()


def test_the_memory_never_admits_past_the_limit(tmp_path: Path) -> None:
    """A budget of 3 admits exactly 3, whether the units are in memory or in the file; a unit
    that left the window makes room again only through the file's transaction (the memory
    keeps counting it, so it can only refuse early, never admit too much)."""
    store = SQLiteStore(tmp_path / "state.sqlite")
    found = _admissions(store, [(NONE, [("w", 3)], 100.0 + i) for i in range(5)])
    assert [a.wait is None for a in found] == [True, True, True, False, False]
    assert found[3].wait == pytest.approx(57.0)  # the oldest of the three leaves at 160
    later = _admissions(store, [(NONE, [("w", 3)], 161.0), (NONE, [("w", 3)], 161.5), (NONE, [("w", 3)], 161.8)])
    assert [a.wait is None for a in later] == [True, True, False]  # 100 and 101 left; 102 still in
    store.close()


def test_a_pause_committed_by_a_command_refuses_the_next_admission(tmp_path: Path) -> None:
    """``gitvow pause`` commits on a connection of its own: the file's data_version changes, so
    the next admission is not answered from memory: the flags come back, nothing is taken."""
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    command = SQLiteStore(path)  # what `gitvow pause` opens

    async def run() -> list[Admission]:
        first = await store.admit_async(NONE, [("w", 10)], 100.0, 60.0)
        second = await store.admit_async(NONE, [("w", 10)], 101.0, 60.0)  # from memory
        command.set_flag(PAUSED, "team/app", True)
        third = await store.admit_async(NONE, [("w", 10)], 102.0, 60.0)
        return [first, second, third]

    first, second, third = asyncio.run(run())
    assert first == second == Admission(None)
    assert third.flags is not None and third.flags[PAUSED] == frozenset({"team/app"})
    assert store.usage("w", 103.0, 60) == 2
    command.close()
    store.close()


def test_admissions_from_memory_ask_only_the_pragma_until_another_commit(tmp_path: Path) -> None:
    """While no connection commits, an admission runs one statement, ``PRAGMA data_version``
    (no transaction); a commit by another process changes that number, so the next admission
    takes the transaction and sees the pause. The units it took reach the file."""
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    statements: list[str] = []

    async def run() -> list[Admission]:
        found = [await store.admit_async(NONE, [("w", 100)], 100.0, 60.0)]  # the transaction
        db = store._budget._db
        assert db is not None
        db.set_trace_callback(statements.append)
        found += [await store.admit_async(NONE, [("w", 100)], 101.0 + i, 60.0) for i in range(5)]
        quiet = list(statements)
        subprocess.run([sys.executable, "-c", "import sys; from gitvow_proxy.store import SQLiteStore, PAUSED; "
                        "s = SQLiteStore(sys.argv[1]); s.set_flag(PAUSED, 'team/app', True); s.close()", str(path)],
                       check=True)
        found.append(await store.admit_async(NONE, [("w", 100)], 107.0, 60.0))
        statements.insert(0, f"{len(quiet)} quiet: {quiet}")
        return found

    found = asyncio.run(run())
    quiet = statements[0]
    assert quiet == "5 quiet: " + str(["PRAGMA data_version"] * 5), quiet  # one statement each, no transaction
    assert found[:6] == [Admission(None)] * 6
    assert found[6].flags is not None and found[6].flags[PAUSED] == frozenset({"team/app"})
    store.close()
    assert _in_file(path, "w") == 6


def test_two_stores_on_one_file_see_each_others_written_units(tmp_path: Path) -> None:
    """A unit another connection wrote changes the file: the memory is read afresh."""
    path = tmp_path / "state.sqlite"
    one, two = SQLiteStore(path), SQLiteStore(path)
    assert _admissions(one, [(NONE, [("w", 2)], 100.0)]) == [Admission(None)]
    assert _admissions(two, [(NONE, [("w", 2)], 101.0)]) == [Admission(None)]
    full = _admissions(one, [(NONE, [("w", 2)], 102.0)])[0]
    assert full.wait == pytest.approx(58.0)
    one.close()
    two.close()


def test_a_unit_given_back_before_it_was_written_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    _admissions(store, [(NONE, [("w", 5)], 100.0), (NONE, [("w", 5)], 101.0)])
    store.give_back(["w"], 101.0, [1])  # still in memory
    store.give_back(["w"], 100.0, [1])  # in the file
    assert store.usage("w", 102.0, 60) == 0
    store.close()
    assert _in_file(path, "w") == 0


def test_a_file_that_cannot_be_written_stops_the_admissions_it_would_have_to_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another writer holds the file, the batch cannot be written: at PENDING_LIMIT
    units waiting, admissions go to the transaction (StoreBusy on the loop), nothing lost."""
    monkeypatch.setattr(sqlite_budget, "PENDING_LIMIT", 3)
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    _admissions(store, [(NONE, [("w", 100)], 100.0)])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    async def run() -> list[str]:
        found = []
        for i in range(5):
            try:
                found.append(str((await store.admit_async(NONE, [("w", 100)], 101.0 + i, 60.0)).wait))
            except StoreBusy:
                found.append("busy")
            await asyncio.sleep(sqlite_budget.FLUSH_SECONDS * 2)  # the batch is tried, and fails
        return found

    assert asyncio.run(run()) == ["None", "None", "None", "busy", "busy"]
    holder.execute("ROLLBACK")
    holder.close()
    assert store.usage("w", 106.0, 60) == 4
    store.close()
    assert _in_file(path, "w") == 4
