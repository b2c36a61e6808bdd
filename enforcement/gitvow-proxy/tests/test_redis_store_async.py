"""RedisStore.admit_async against a real redis-server: the same answers as the thread's
``admit`` on the same data, the same errors and bookkeeping, a hung server bounded by the
store's timeout while the event loop keeps running, and connections released on close."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitvow_proxy.store import (
    AUTO_MERGE_OFF,
    FLAG_KINDS,
    PAUSED,
    Admission,
    Flags,
    MemoryStore,
    Store,
    StoreError,
    StoreUnavailable,
)
from gitvow_proxy.testing import RedisServer

redis_store = pytest.importorskip("gitvow_proxy.store.redis_store")

NONE: Flags = {kind: frozenset() for kind in FLAG_KINDS}
#: The flags of the store of the agreement test.
SEEN: Flags = {**NONE, AUTO_MERGE_OFF: frozenset({"team/other"})}

Admit = Callable[[Flags, Sequence[tuple[str, int]], float, float, Sequence[int] | None], Awaitable[Admission]]


def _threaded(store: Any) -> Admit:
    async def admit(seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
                    amounts: Sequence[int] | None) -> Admission:
        admission: Admission = store.admit(seen, keys, now, window, amounts)
        return admission

    return admit


async def _story(admit: Admit, prefix: str) -> list[Admission]:
    """One sequence of admissions, on windows of their own (``prefix``), at fixed times, by a
    caller that saw the store's flags (:data:`SEEN`) but once a pause the store no longer has."""
    t = 1_000_000.0
    stale: Flags = {**SEEN, PAUSED: frozenset({"team/app"})}
    return [
        await admit(SEEN, [(prefix + "w", 3), (prefix + "op", 10)], t, 60.0, None),      # taken
        await admit(SEEN, [(prefix + "w", 3), (prefix + "op", 10)], t + 1, 60.0, [2, 2]),  # taken: the window is full
        await admit(SEEN, [(prefix + "w", 3), (prefix + "op", 10)], t + 2, 60.0, None),  # no room: 58 s to wait
        await admit(SEEN, [(prefix + "op", 10), (prefix + "w", 3)], t + 61, 60.0, None),  # the first unit left
        await admit(stale, [(prefix + "other", 5)], t + 62, 60.0, None),  # flags differ: the store's, nothing taken
        await admit(SEEN, [(prefix + "other", 5)], t + 63, 60.0, [6]),  # above the limit: never fits
    ]


def test_async_and_threaded_admissions_agree(redis_server: RedisServer) -> None:
    store = redis_store.RedisStore(redis_server.url, server_clock=False)
    store.set_flag(AUTO_MERGE_OFF, "Team/Other", True)

    async def both() -> tuple[list[Admission], list[Admission]]:
        return await _story(_threaded(store), "t:"), await _story(store.admit_async, "a:")

    threaded, awaited = asyncio.run(both())
    store.close()
    assert awaited == threaded
    assert awaited[:4] == [Admission(None), Admission(None), Admission(58.0), Admission(None)]
    assert awaited[4] == Admission(None, SEEN)  # the store's flags, every kind
    assert awaited[5] == Admission(60.0)
    for prefix in ("t:", "a:"):  # what the stories left in the store is the same too
        assert store.usage(prefix + "w", 1_000_000.0 + 61, 60.0) == 1  # the units of t and t + 1 trimmed at t + 61
        assert store.usage(prefix + "op", 1_000_000.0 + 61, 60.0) == 1
        assert store.usage(prefix + "other", 1_000_000.0 + 64, 60.0) == 0  # nothing taken by either refusal


def test_async_admission_reads_the_stores_clock(redis_server: RedisServer) -> None:
    """As the threaded admission: a replica whose clock is hours off shares the store's window."""
    slow, fast = (redis_store.RedisStore(redis_server.url) for _ in range(2))
    now = time.time()

    async def run() -> tuple[Admission, Admission]:
        return (await slow.admit_async(NONE, [("clock", 1)], now - 10_000, 60.0),
                await fast.admit_async(NONE, [("clock", 1)], now + 10_000, 60.0))

    first, second = asyncio.run(run())
    assert first == Admission(None)
    assert second.wait is not None and 59.0 <= second.wait <= 60.0
    assert slow.admit(NONE, [("clock", 1)], now, 60.0).wait is not None
    slow.close()
    fast.close()


def test_a_stopped_server_is_unavailable_within_the_timeout_and_the_loop_runs(redis_server: RedisServer) -> None:
    """SIGSTOP: the server accepts and never answers. The admission gives up after the store's
    timeout (once, not once per retry), as the thread's admission does beside it, while other
    coroutines keep running; the next one after the retry interval, with the server back, is
    admitted."""
    store, threaded = (redis_store.RedisStore(redis_server.url, timeout=1.0, retry_interval=0.2) for _ in range(2))
    assert redis_server.proc is not None
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    def timed(admit: Callable[[], Admission]) -> float:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            admit()
        return time.monotonic() - started

    async def run() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        ticker = loop.create_task(tick())
        assert await store.admit_async(NONE, [("k", 10)], time.time(), 60.0) == Admission(None)
        assert threaded.admit(NONE, [("k", 10)], time.time(), 60.0) == Admission(None)
        errors = store.errors
        redis_server.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:
            beside = loop.run_in_executor(None, timed, lambda: threaded.admit(NONE, [("k", 10)], time.time(), 60.0))
            before, started = ticks, time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.admit_async(NONE, [("k", 10)], time.time(), 60.0)
            elapsed = time.monotonic() - started
            assert ticks - before >= 10, "the event loop was held up while waiting for the store"
            assert store.errors == errors + 1 and not store.available
            elapsed_threaded = await beside
        finally:
            redis_server.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        await asyncio.sleep(0.3)  # the retry interval
        assert await store.admit_async(NONE, [("k", 10)], time.time(), 60.0) == Admission(None)
        assert store.available
        ticker.cancel()
        return elapsed, elapsed_threaded

    elapsed, elapsed_threaded = asyncio.run(run())
    store.close()
    threaded.close()
    # Not a benchmark: a bound. Twice the timeout would mean a retry waited again.
    assert 0.9 <= elapsed < 1.9, elapsed
    assert 0.9 <= elapsed_threaded < 1.9, elapsed_threaded
    # Each script sent before its timeout may run once the server resumes (the budget errs
    # toward refusing), at most once each: a timeout is not retried, so never sent twice.
    assert 3 <= store.usage("k", time.time(), 60.0) <= 5


def test_a_restarted_server_admits_the_next_write(redis_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    """Stopped, then started again empty on the same port: refused meanwhile (fast, within the
    retry interval), and the first admission after the interval works on a fresh connection."""
    store = redis_store.RedisStore(redis_server.url, retry_interval=0.2)
    caplog.set_level(logging.INFO, logger="gitvow_proxy")

    async def run() -> None:
        for _ in range(3):  # admissions in batches on the connection, stale after the restart
            await asyncio.gather(*(store.admit_async(NONE, [("k", 100)], time.time(), 60.0) for _ in range(3)))
        redis_server.stop()
        for _ in range(3):
            with pytest.raises(StoreUnavailable):
                await store.admit_async(NONE, [("k", 100)], time.time(), 60.0)
        assert store.errors == 1  # tried once; the others were refused within the retry interval
        redis_server.start()
        await asyncio.sleep(0.3)
        assert await store.admit_async(NONE, [("k", 100)], time.time(), 60.0) == Admission(None)
        assert await store.admit_async(NONE, [("k", 100)], time.time(), 60.0) == Admission(None)

    asyncio.run(run())
    assert store.available and store.errors == 1
    assert store.usage("k", time.time(), 60.0) == 2  # the restarted server kept nothing
    store.close()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in line for line in lines) == 1, lines  # each change logged once
    assert sum("reachable again" in line for line in lines) == 1, lines


def test_errors_count_as_the_threaded_path_counts_them(redis_server: RedisServer) -> None:
    """The same failures through both paths leave the same ``errors``: an error answer counts
    and is a StoreError, not an outage; an unreachable server counts once per retry interval."""
    import redis

    redis.Redis(port=redis_server.port).set("gitvow:ev:wrong", "not a sorted set")
    threaded, awaited = (redis_store.RedisStore(redis_server.url, retry_interval=60) for _ in range(2))

    def outcome(call: Callable[[], Admission]) -> str:
        try:
            return repr(call())
        except StoreError as exc:
            return type(exc).__name__

    async def in_loop(seen: Flags, key: str) -> str:
        try:
            return repr(await awaited.admit_async(seen, [(key, 5)], time.time(), 60.0))
        except StoreError as exc:
            return type(exc).__name__

    def both(key: str) -> tuple[str, str]:
        mine = outcome(lambda: threaded.admit(NONE, [(key, 5)], time.time(), 60.0))
        return mine, asyncio.run(in_loop(NONE, key))

    assert both("wrong") == ("StoreError", "StoreError")
    assert threaded.errors == awaited.errors == 1 and threaded.available and awaited.available
    redis_server.stop()
    assert both("k") == ("StoreUnavailable", "StoreUnavailable")
    assert both("k") == ("StoreUnavailable", "StoreUnavailable")  # within the retry interval: not tried
    assert threaded.errors == awaited.errors == 2
    assert not threaded.available and not awaited.available
    threaded.close()
    awaited.close()


def test_password_and_tls_as_the_threaded_client(tls_redis_server: RedisServer, ca_file: Path) -> None:
    """``rediss://`` with ``ssl_ca_certs`` and a password: the loop's client connects as the
    thread's does, and refuses an unknown CA or a wrong password the same way."""
    import redis

    with redis.Redis(host="127.0.0.1", port=tls_redis_server.port, ssl=True, ssl_ca_certs=str(ca_file)) as admin:
        admin.config_set("requirepass", "s3cret-redis")

    def admit(**options: str) -> str:
        store = redis_store.RedisStore(tls_redis_server.url, **options)
        try:
            return repr(asyncio.run(store.admit_async(NONE, [("k", 5)], time.time(), 60.0)))
        except StoreUnavailable:
            return "StoreUnavailable"
        finally:
            store.close()

    assert admit(password="s3cret-redis", ca_file=str(ca_file)) == repr(Admission(None))
    assert admit(password="wrong", ca_file=str(ca_file)) == "StoreUnavailable"
    assert admit(password="s3cret-redis") == "StoreUnavailable"  # the system CAs do not know the test CA


def _clients(server: RedisServer) -> int:
    import redis

    with redis.Redis(port=server.port) as observer:
        return int(observer.info("clients")["connected_clients"]) - 1


@pytest.mark.parametrize("where", ["after its loop", "on its loop"])
def test_close_releases_the_loops_connections(redis_server: RedisServer, where: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """Closed after ``asyncio.run`` returned (no loop at all) or from a callback on the loop (as
    mitmproxy's ``done``): every connection is gone, without a warning or a pending task."""
    gc.collect()  # what tests before this one left for the collector is not this store's
    store = redis_store.RedisStore(redis_server.url)
    store.admit(NONE, [("k", 100)], time.time(), 60.0)  # the thread's client too

    async def run() -> None:
        await asyncio.gather(*(store.admit_async(NONE, [("k", 100)], time.time(), 60.0) for _ in range(4)))
        assert _clients(redis_server) >= 2
        if where == "on its loop":
            store.close()
            deadline = time.monotonic() + 5
            while _clients(redis_server):  # released while the loop still runs, not only at its end
                assert time.monotonic() < deadline, "connections left open"
                await asyncio.sleep(0.02)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(run())
        if where == "after its loop":
            store.close()
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # "Task was destroyed but it is pending!"
    deadline = time.monotonic() + 5
    while _clients(redis_server):
        assert time.monotonic() < deadline, "connections left open"
        time.sleep(0.05)


@contextmanager
def _loop_in_a_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in a thread of its own (as mitmproxy's runs beside the test), stopped
    and closed on leaving."""
    import threading

    owner = asyncio.new_event_loop()
    thread = threading.Thread(target=owner.run_forever)
    thread.start()
    try:
        yield owner
    finally:
        owner.call_soon_threadsafe(owner.stop)
        thread.join()
        owner.close()


def test_a_second_running_loop_is_refused(redis_server: RedisServer) -> None:
    """The loop that first awaited the store owns its connections: another running loop is a
    store error (a refusal), never a client shared between loops; once that loop has closed,
    a new one takes over."""
    store = redis_store.RedisStore(redis_server.url)
    with _loop_in_a_thread() as owner:
        first = asyncio.run_coroutine_threadsafe(store.admit_async(NONE, [("k", 5)], time.time(), 60.0), owner)
        assert first.result(5) == Admission(None)
        with pytest.raises(StoreError, match="another running event loop"):
            asyncio.run(store.admit_async(NONE, [("k", 5)], time.time(), 60.0))
        asyncio.run_coroutine_threadsafe(owner.shutdown_asyncgens(), owner).result(5)  # as asyncio.run ends
    assert asyncio.run(store.admit_async(NONE, [("k", 5)], time.time(), 60.0)) == Admission(None)
    store.close()
    assert store.usage("k", time.time(), 60.0) == 2


def test_stores_that_block_do_not_admit_on_the_loop() -> None:
    class Blocking(MemoryStore):
        """A store that keeps the interface's default: its admit runs on a worker thread."""

        admits_on_loop = False
        admit_async = Store.admit_async  # type: ignore[assignment]

    store = Blocking()
    assert redis_store.RedisStore.admits_on_loop and MemoryStore.admits_on_loop
    with pytest.raises(NotImplementedError):
        asyncio.run(store.admit_async(NONE, [("k", 1)], time.time(), 60.0))
    assert asyncio.run(MemoryStore().admit_async(NONE, [("k", 1)], time.time(), 60.0)) == Admission(None)


def test_close_from_another_thread_releases_the_connections_at_once(redis_server: RedisServer) -> None:
    """A store closed from a worker thread (a reload replacing the store) while its loop runs on."""
    store = redis_store.RedisStore(redis_server.url)
    with _loop_in_a_thread() as owner:
        admitted = asyncio.run_coroutine_threadsafe(store.admit_async(NONE, [("k", 5)], time.time(), 60.0), owner)
        assert admitted.result(5) == Admission(None) and _clients(redis_server) == 1
        store.close()
        assert _clients(redis_server) == 0


@pytest.mark.parametrize("args", [
    ["EVALSHA", "0" * 40, 2, "gitvow:ev:a", "gitvow:ev:b", 0, "TIME", "3600.0", "1.000000:ab12", 25, 1, 10**9, 2],
    ["SCRIPT", "LOAD", "return 'é'\r\n"],  # multi-byte UTF-8 and a CRLF inside a value
    ["EVALSHA", "x", 1, "gitvow:flags:paused", 1, "", "team/ä\nteam/b", -3],  # empty strings, newlines, negatives
    ["SET", "k", "v" * 7000],  # above redis-py's buffer cutoff (it sends that in pieces)
])
def test_commands_are_packed_as_redis_py_packs_them(args: list[str | int]) -> None:
    from redis.asyncio.connection import Connection

    assert redis_store.pack(args) == b"".join(Connection().pack_command(*args))


def test_concurrent_admissions_each_read_their_own_answer(redis_server: RedisServer) -> None:
    """Admissions in flight together on the loop each get the answer to their own script:
    windows filled at different times answer different waits, with a take and a changed flag
    among them; an error answer on the way leaves the connection usable and in step."""
    import redis

    store = redis_store.RedisStore(redis_server.url, server_clock=False, timeout=10.0)  # eleven admissions in one batch on a loaded machine
    t = 1_000_000.0
    for i in range(8):
        store.take([(f"full{i}", 1)], t + i, 60.0)  # full; room again at t + i + 60
    with redis.Redis(port=redis_server.port) as observer:
        observer.set("gitvow:ev:wrong", "not a sorted set")
    stale: Flags = {**NONE, PAUSED: frozenset({"team/gone"})}

    async def admit(seen: Flags, key: str) -> Admission | str:
        try:
            return await store.admit_async(seen, [(key, 1)], t + 10, 60.0)
        except StoreError as exc:
            return type(exc).__name__

    async def run() -> list[Admission | str]:
        assert await admit(NONE, "warm") == Admission(None)  # an idle connection the next ones could share
        calls = [admit(NONE, f"full{i}") for i in range(8)]
        calls[3:3] = [admit(NONE, "free"), admit(stale, "free2"), admit(NONE, "wrong")]
        first = await asyncio.gather(*calls)
        connections = _clients(redis_server)
        for i in range(8):  # one after another now: the connections are reused, each still in step
            assert await admit(NONE, "wrong") == "StoreError"
            assert await admit(NONE, f"full{i}") == Admission(float(50 + i))
        assert _clients(redis_server) == connections
        return first

    answers = asyncio.run(run())
    full = [Admission(float(50 + i)) for i in range(8)]
    assert answers == [*full[:3], Admission(None), Admission(None, NONE), "StoreError", *full[3:]]
    assert store.usage("free", t + 10, 60.0) == 1 and store.usage("free2", t + 10, 60.0) == 0
    store.close()


def test_a_reply_that_came_too_late_is_never_read_as_the_next_answer(redis_server: RedisServer) -> None:
    """An admission that timed out (the server stopped mid-call) leaves its reply unread on its
    connection; once the server resumes, the next admission must read its own answer, never
    that one: the connection of a failed admission is closed, not reused."""
    store = redis_store.RedisStore(redis_server.url, server_clock=False, timeout=0.5, retry_interval=0.0)
    assert redis_server.proc is not None
    t = 1_000_000.0
    store.take([("full", 1)], t, 60.0)

    async def run() -> tuple[Admission, Admission]:
        assert await store.admit_async(NONE, [("warm", 5)], t, 60.0) == Admission(None)  # a connection made
        redis_server.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:
            with pytest.raises(StoreUnavailable):
                await store.admit_async(NONE, [("full", 1)], t + 1, 60.0)  # its answer would be "59"
        finally:
            redis_server.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        # At once (no retry interval): the late reply is still on its way, so only not reusing
        # that connection keeps it from being read as this admission's answer.
        return (await store.admit_async(NONE, [("free", 5)], t + 2, 60.0),
                await store.admit_async(NONE, [("full", 1)], t + 3, 60.0))

    free, full = asyncio.run(run())
    store.close()
    assert free == Admission(None)
    assert full == Admission(57.0)
    assert store.available


def test_a_server_that_lost_the_script_loads_it_and_admits_once(redis_server: RedisServer) -> None:
    """``SCRIPT FLUSH`` (as a restart does): the next admission gets NOSCRIPT, which ran
    nothing; the script is loaded and the admission sent again, so it is taken exactly once."""
    import redis

    store = redis_store.RedisStore(redis_server.url, server_clock=False)
    observer = redis.Redis(port=redis_server.port)

    async def run() -> list[Admission]:
        answers = [await store.admit_async(NONE, [("k", 3)], 1_000_000.0, 60.0)]
        observer.script_flush()
        answers.append(await store.admit_async(NONE, [("k", 3)], 1_000_001.0, 60.0))
        observer.script_flush()
        answers.append(await store.admit_async(NONE, [("k", 1)], 1_000_002.0, 60.0))  # full: 59 s
        return answers

    answers = asyncio.run(run())
    assert answers == [Admission(None), Admission(None), Admission(59.0)]
    assert store.usage("k", 1_000_002.0, 60.0) == 2
    store.close()
    assert observer.script_exists(store._take.sha) == [True]
    observer.close()
