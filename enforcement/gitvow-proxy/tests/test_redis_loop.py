"""The Redis admissions' own connection (``gitvow_proxy.store.redis_loop``) against a real
redis-server: replies matched in order when admissions share the connection, replies split
across reads, a timeout or a cancellation in the middle of a batch, ``NOSCRIPT`` inside a
batch, the URL's database, and the command the loop packs once per budget."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitvow_proxy.store import AUTO_MERGE_OFF, FLAG_KINDS, PAUSED, Admission, Flags, StoreError, StoreUnavailable
from gitvow_proxy.testing import RedisServer

redis_store = pytest.importorskip("gitvow_proxy.store.redis_store")
redis_loop = pytest.importorskip("gitvow_proxy.store.redis_loop")

NONE: Flags = {kind: frozenset() for kind in FLAG_KINDS}
T = 1_000_000.0


def _connection(store: Any) -> Any:
    client = store._aclient
    assert client is not None
    return client.connection


@contextmanager
def _counted_writes(store: Any) -> Iterator[list[bytes]]:
    """What the loop's connection writes, one entry per ``transport.write`` (observed, then passed on)."""
    connection = _connection(store)
    transport = connection._transport
    writes: list[bytes] = []
    write = transport.write

    def counted(data: bytes) -> None:
        writes.append(bytes(data))
        write(data)

    transport.write = counted
    try:
        yield writes
    finally:
        del transport.write


def test_concurrent_admissions_share_one_connection_and_each_read_their_own_answer(redis_server: RedisServer) -> None:
    """Forty admissions in flight at once, on windows filled at different times (so each
    expects its own wait), with takes, changed flags and error answers among them: each gets
    its own answer, on one connection, in fewer writes than admissions (group commit)."""
    import redis

    store = redis_store.RedisStore(redis_server.url, server_clock=False)
    for i in range(30):
        store.take([(f"full{i}", 1)], T + i, 60.0)  # full; room again at T + i + 60
    with redis.Redis(port=redis_server.port) as observer:
        observer.set("gitvow:ev:wrong", "not a sorted set")
    stale: Flags = {**NONE, PAUSED: frozenset({"team/gone"})}

    async def admit(seen: Flags, key: str) -> Admission | str:
        try:
            answer: Admission = await store.admit_async(seen, [(key, 1)], T + 40, 60.0)
            return answer
        except StoreError as exc:
            return type(exc).__name__

    calls: list[tuple[Flags, str]] = [(NONE, f"full{i}") for i in range(30)]
    for n in range(5):
        calls.insert(3 + 6 * n, (NONE, f"free{n}"))
        calls.insert(5 + 6 * n, (stale, f"free{n}b"))
    expected: list[Admission | str] = [
        Admission(float(20 + int(key[4:]))) if key.startswith("full") else Admission(None, NONE) if seen is stale
        else Admission(None) for seen, key in calls]
    calls.insert(10, (NONE, "wrong"))
    expected.insert(10, "StoreError")

    async def run() -> list[Admission | str]:
        assert await admit(NONE, "warm") == Admission(None)  # the connection made
        with _counted_writes(store) as writes:
            answers = await asyncio.gather(*(admit(seen, key) for seen, key in calls))
        assert 1 < len(writes) < len(calls), len(writes)  # grouped: commands shared writes
        assert sum(write.count(b"EVALSHA") for write in writes) == len(calls)  # each sent once
        assert len(store._aclient._connections) == 1
        with redis.Redis(port=redis_server.port) as observer:
            assert int(observer.info("clients")["connected_clients"]) == 3  # the loop's, the thread's, this one
        return answers

    answers = asyncio.run(run())
    assert answers == expected
    for n in range(5):
        assert store.usage(f"free{n}", T + 40, 60.0) == 1 and store.usage(f"free{n}b", T + 40, 60.0) == 0
    store.close()


@asynccontextmanager
async def _byte_by_byte(port: int) -> AsyncIterator[int]:
    """A loopback relay to the Redis on ``port`` that hands each reply on one byte per write,
    waiting between bytes, so the client reads every reply in pieces. Yields its port."""
    chunks: list[int] = []

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, split: bool) -> None:
        try:
            while data := await reader.read(65536):
                if not split:
                    writer.write(data)
                    continue
                for i in range(len(data)):
                    writer.write(data[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(0.0005)
                    chunks.append(1)
        finally:
            writer.close()

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pump(client_reader, server_writer, False), pump(server_reader, client_writer, True),
                             return_exceptions=True)

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
        assert len(chunks) > 100  # the relay did split the replies
    finally:
        server.close()


def test_replies_split_across_reads(redis_server: RedisServer) -> None:
    """Every reply arrives a byte at a time (a take, a wait, the store's flags as an array, an
    error, ``NOSCRIPT`` then the script's load): each admission still reads its own answer."""
    import redis

    with redis.Redis(port=redis_server.port) as observer:
        observer.set("gitvow:ev:wrong", "not a sorted set")
        observer.sadd("gitvow:flags:" + AUTO_MERGE_OFF, "team/other")
    seen: Flags = {**NONE, AUTO_MERGE_OFF: frozenset({"team/other"})}

    async def run() -> list[Admission | str]:
        async with _byte_by_byte(redis_server.port) as port:
            store = redis_store.RedisStore(f"redis://127.0.0.1:{port}/0", server_clock=False, timeout=30.0)

            async def admit(flags: Flags, key: str, now: float) -> Admission | str:
                try:
                    answer: Admission = await store.admit_async(flags, [(key, 2)], now, 60.0)
                    return answer
                except StoreError as exc:
                    return type(exc).__name__

            answers = [await admit(seen, "k", T), await admit(seen, "k", T + 1), await admit(seen, "k", T + 2)]
            answers += await asyncio.gather(admit(NONE, "k", T + 3), admit(seen, "wrong", T + 3),
                                            admit(seen, "j", T + 3))
            with redis.Redis(port=redis_server.port) as observer:
                observer.script_flush()
            answers += await asyncio.gather(admit(seen, "j", T + 4), admit(NONE, "i", T + 4), admit(seen, "i", T + 4))
            store.close()
            return answers

    answers = asyncio.run(run())
    assert answers == [Admission(None), Admission(None), Admission(58.0),
                       Admission(None, seen), "StoreError", Admission(None),
                       Admission(None), Admission(None, seen), Admission(None)]


def test_a_timeout_mid_batch_fails_every_waiting_admission_and_the_connection_is_not_reused(
        redis_server: RedisServer) -> None:
    """The server stops with one admission in flight and five waiting behind it: all six are
    refused within the store's timeout, the five never sent (nothing of theirs taken when the
    server resumes), and the next admission reads its own answer on a new connection, never a
    late reply."""
    store = redis_store.RedisStore(redis_server.url, server_clock=False, timeout=0.5, retry_interval=0.0)
    assert redis_server.proc is not None
    store.take([("full", 1)], T, 60.0)

    async def run() -> tuple[list[Any], float, Admission, Admission]:
        assert await store.admit_async(NONE, [("warm", 5)], T, 60.0) == Admission(None)
        first = _connection(store)
        redis_server.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        started = time.monotonic()
        try:
            async with asyncio.timeout(10):  # a failure of this test, not a hang, if nothing bounds them
                outcomes = await asyncio.gather(store.admit_async(NONE, [("full", 1)], T + 1, 60.0),
                                                *(store.admit_async(NONE, [(f"queued{i}", 5)], T + 1, 60.0)
                                                  for i in range(5)), return_exceptions=True)
            elapsed = time.monotonic() - started
        finally:
            redis_server.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        assert first.failed is not None
        free = await store.admit_async(NONE, [("free", 5)], T + 2, 60.0)
        full = await store.admit_async(NONE, [("full", 1)], T + 3, 60.0)
        assert _connection(store) is not first
        return outcomes, elapsed, free, full

    outcomes, elapsed, free, full = asyncio.run(run())
    assert [type(o) for o in outcomes] == [StoreUnavailable] * 6
    assert 0.4 <= elapsed < 1.4, elapsed  # a bound, not a benchmark: once the timeout, not once per admission
    assert free == Admission(None)
    assert full == Admission(57.0)  # its own answer, not the late "59" of the stopped admission
    assert all(store.usage(f"queued{i}", T + 3, 60.0) == 0 for i in range(5))  # never sent
    assert store.available
    store.close()


def test_an_admission_cancelled_in_flight_leaves_the_connection_in_step(redis_server: RedisServer) -> None:
    """A write given up (its task cancelled) while its command is in flight: its reply is read
    and dropped, the next admission on the same connection reads its own; one cancelled
    before its command was written is never sent."""
    store = redis_store.RedisStore(redis_server.url, server_clock=False, timeout=5.0)
    assert redis_server.proc is not None
    store.take([("full", 1)], T, 60.0)

    async def run() -> Admission:
        assert await store.admit_async(NONE, [("warm", 5)], T, 60.0) == Admission(None)
        connection = _connection(store)
        redis_server.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:
            sent = asyncio.create_task(store.admit_async(NONE, [("full", 1)], T + 1, 60.0))  # its answer would be "59"
            queued = asyncio.create_task(store.admit_async(NONE, [("never", 5)], T + 1, 60.0))
            await asyncio.sleep(0.05)
            sent.cancel()
            queued.cancel()
            mine = asyncio.create_task(store.admit_async(NONE, [("free", 5)], T + 2, 60.0))
            await asyncio.sleep(0.05)
        finally:
            redis_server.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        answer: Admission = await mine
        assert sent.cancelled() and queued.cancelled()
        assert _connection(store) is connection and connection.failed is None
        assert await store.admit_async(NONE, [("full", 1)], T + 3, 60.0) == Admission(57.0)
        return answer

    assert asyncio.run(run()) == Admission(None)
    assert store.usage("never", T + 3, 60.0) == 0
    assert store.usage("full", T + 3, 60.0) == 1  # the cancelled one ran (sent before it was given up): refused, untaken
    store.close()


def test_noscript_inside_a_batch_loads_the_script_once_and_takes_each_once(redis_server: RedisServer) -> None:
    """The server lost its scripts while twelve admissions are in flight or waiting: every one
    is admitted, each taken exactly once, the script loaded again."""
    import redis

    store = redis_store.RedisStore(redis_server.url, server_clock=False)
    observer = redis.Redis(port=redis_server.port)

    async def run() -> list[Admission]:
        assert await store.admit_async(NONE, [("k", 100)], T, 60.0) == Admission(None)
        observer.script_flush()
        answers = list(await asyncio.gather(*(store.admit_async(NONE, [("k", 100)], T + 1, 60.0) for _ in range(12))))
        observer.script_flush()
        answers += await asyncio.gather(*(store.admit_async(NONE, [("k", 13)], T + 2, 60.0) for _ in range(2)))
        return answers

    answers = asyncio.run(run())
    assert answers == [Admission(None)] * 12 + [Admission(58.0)] * 2  # full: the unit of T leaves at T + 60
    assert store.usage("k", T + 2, 60.0) == 13
    assert observer.script_exists(store._take.sha) == [True]
    observer.close()
    store.close()


def test_the_urls_database_is_the_threads(redis_server: RedisServer) -> None:
    """``redis://…/3``: the loop's connection selects database 3, as the thread's client does."""
    import redis

    store = redis_store.RedisStore(redis_server.url.rsplit("/", 1)[0] + "/3", server_clock=False)
    assert asyncio.run(store.admit_async(NONE, [("k", 5)], T, 60.0)) == Admission(None)
    assert store.usage("k", T, 60.0) == 1
    with redis.Redis(port=redis_server.port, db=0) as zero, redis.Redis(port=redis_server.port, db=3) as three:
        assert zero.exists("gitvow:ev:k") == 0 and three.exists("gitvow:ev:k") == 1
    store.close()


@pytest.mark.parametrize("server_clock", [True, False])
@pytest.mark.parametrize(("seen", "keys", "amounts"), [
    (NONE, [("budget:a:writes", 25), ("budget:a:op:issue.comment", 10)], None),
    ({**NONE, PAUSED: frozenset({"team/b", "team/a"})}, [("w", 3)], [2]),
    (NONE, [("ä", 1)], [1]),
    (NONE, [("w", 3)], [4]),  # never fits: an answer without a command
])
def test_the_loops_packed_command_is_the_threads(server_clock: bool, seen: Flags, keys: list[tuple[str, int]],
                                                 amounts: list[int] | None) -> None:
    """The command kept per budget and completed per admission is, byte for byte, the one
    redis-py sends for the thread's admission with the same time and member."""
    from redis.asyncio.connection import Connection

    store = redis_store.RedisStore("redis://127.0.0.1:1/0", server_clock=server_clock)  # no I/O here
    for now in (1_700_000_000.123456, 5.0):
        packed = store._packed_take(seen, keys, 3600.0, amounts)
        assert store._packed_take(seen, keys, 3600.0, amounts) is packed  # kept
        call = store._take_call(seen, keys, now, 3600.0, amounts, token="00ff00ff00ff")
        if isinstance(call, Admission):
            assert packed == call == Admission(3600.0)
            continue
        expected = b"".join(Connection().pack_command("EVALSHA", store._take.sha, len(call.names), *call.names, *call.args))
        assert packed.command(now, "00ff00ff00ff", server_clock) == expected
    store.close()


@pytest.mark.parametrize(("data", "value"), [
    (b"$-1\r\n", None),
    (b"$2\r\n59\r\n", "59"),
    (b"$0\r\n\r\n", ""),
    (b"*2\r\n$0\r\n\r\n$14\r\nteam/a\nteam/\xc3\xa4\r\n", ["", "team/a\nteam/ä"]),
    (b"*-1\r\n", None),
    (b"*2\r\n:1\r\n*1\r\n+OK\r\n", [1, ["OK"]]),
    (b"+OK\r\n", "OK"),
    (b":-42\r\n", -42),
    (b"-NOSCRIPT No matching script.\r\n", "NOSCRIPT No matching script."),
])
def test_every_reply_is_read_whole_and_never_from_a_part(data: bytes, value: Any) -> None:
    """Each reply the admissions see, parsed whole (and followed by the next one's start), and
    incomplete at every shorter length."""
    assert redis_loop.parse(data + b"$3\r\n", 0) == (value, len(data))
    assert redis_loop.parse(b"xx" + data, 2) == (value, len(data) + 2)
    if data.startswith(b"-"):
        assert type(redis_loop.parse(data, 0)[0]) is redis_loop.ErrorReply
    for cut in range(len(data)):
        assert redis_loop.parse(data[:cut], 0) is None, cut


@pytest.mark.parametrize("data", [b"?1\r\n", b"$2\r\n590\r\n", b"$x\r\n", b"$2\r\n\xff\xfe\r\n"])
def test_a_malformed_reply_is_an_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        redis_loop.parse(data, 0)


def test_tls_and_password_with_admissions_in_a_batch(tls_redis_server: RedisServer, ca_file: Path) -> None:
    """``rediss://`` with the configured CA and a password: concurrent admissions share the TLS
    connection, each with its own answer; closed on its loop, the socket is gone, without a
    warning."""
    import warnings

    import redis

    admin = redis.Redis(host="127.0.0.1", port=tls_redis_server.port, ssl=True, ssl_ca_certs=str(ca_file))
    admin.config_set("requirepass", "s3cret-redis")
    admin.close()
    store = redis_store.RedisStore(tls_redis_server.url, password="s3cret-redis", ca_file=str(ca_file),
                                   server_clock=False)
    store.take([("full", 1)], T, 60.0)

    def clients() -> int:
        with redis.Redis(host="127.0.0.1", port=tls_redis_server.port, ssl=True, ssl_ca_certs=str(ca_file),
                         password="s3cret-redis") as observer:
            return int(observer.info("clients")["connected_clients"]) - 1

    async def run() -> list[Admission]:
        answers = list(await asyncio.gather(*(store.admit_async(NONE, [(key, 1)], T + 1, 60.0)
                                              for key in ("a", "full", "b", "full", "c"))))
        assert len(store._aclient._connections) == 1 and clients() == 2  # the loop's and the thread's
        store.close()
        deadline = time.monotonic() + 5
        while clients():
            assert time.monotonic() < deadline, "connections left open"
            await asyncio.sleep(0.02)
        return answers

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answers = asyncio.run(run())
    assert [str(w.message) for w in caught] == []
    assert answers == [Admission(None), Admission(59.0), Admission(None), Admission(59.0), Admission(None)]


@pytest.mark.parametrize("command", [
    ["EVALSHA", "0" * 40, "0"],  # NOSCRIPT
    ["AUTH", "nobody-set-one"],  # ERR AUTH <password> called without any password configured...
    ["AUTH"],  # ERR wrong number of arguments for 'auth' command
    ["NOSUCHCOMMAND"],  # ERR unknown command
    ["LPUSH", "gitvow:test:a-set", "x"],  # WRONGTYPE
])
def test_an_error_reply_is_the_exception_redis_py_raises_for_it(redis_server: RedisServer, command: list[str]) -> None:
    """The loop's connection names a real server's error reply as the thread's client (redis-py)
    does: the same public class, message and status code."""
    import socket

    import redis

    client = redis.Redis(port=redis_server.port, decode_responses=True)
    client.sadd("gitvow:test:a-set", "member")
    with pytest.raises(redis.RedisError) as theirs:
        client.execute_command(*command)
    with socket.create_connection(("127.0.0.1", redis_server.port)) as raw:
        raw.sendall(redis_loop.pack(command))
        data = b""
        while not data.endswith(b"\r\n"):
            data += raw.recv(4096)
    client.delete("gitvow:test:a-set")
    client.close()
    reply, _ = redis_loop.parse(data, 0)
    ours = redis_loop.error_for(reply)
    assert (type(ours), ours.args, ours.status_code) == (type(theirs.value), theirs.value.args, theirs.value.status_code)


@pytest.mark.parametrize(("reply", "kind"), [
    ("LOADING Redis is loading the dataset in memory", "BusyLoadingError"),
    ("WRONGPASS invalid username-password pair or user is disabled.", "AuthenticationError"),
    ("NOAUTH Authentication required.", "AuthenticationError"),
    ("ERR max number of clients reached", "MaxClientsReachedError"),
    ("READONLY You can't write against a read only replica.", "ReadOnlyError"),
    ("OOM command not allowed when used memory > 'maxmemory'.", "OutOfMemoryError"),
    ("BUSY Redis is busy running a script.", "ResponseError"),
])
def test_a_server_that_cannot_serve_is_a_connection_error_and_the_rest_response_errors(reply: str, kind: str) -> None:
    import redis

    error = redis_loop.error_for(reply)
    assert type(error).__name__ == kind
    assert isinstance(error, redis.ConnectionError) == (kind in ("BusyLoadingError", "AuthenticationError",
                                                                 "MaxClientsReachedError"))
