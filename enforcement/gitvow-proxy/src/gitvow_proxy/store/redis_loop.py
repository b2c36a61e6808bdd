"""The Redis admissions' own connection on the event loop: a minimal asyncio protocol.

A budgeted write's admission is one ``EVALSHA`` and its one short reply. Through
``redis.asyncio`` that round trip cost the proxy more CPU than the rest of the admission: a
stream reader and writer, the parser's coroutines, a future per read. Here the loop's
transport calls :meth:`_Connection.data_received` with the bytes that came, a small RESP2
reader (:func:`parse`) takes the replies out of them, and each reply resolves its admission's
future: one send and one receive per round trip, no task but the admission's own.

Several admissions share one connection, their replies matched in the order the commands
were sent (Redis answers a connection's commands in order). Group commit: while commands are
in flight, the next ones wait and go together in one write as soon as a reply comes, so
concurrent writes share the system calls and the wake-ups (each command still its own
``EVALSHA``, each reply its own answer).

Redis-py still reads the URL (host, port, database, ``rediss://`` and its TLS options, made
into an ``ssl.SSLContext`` by redis-py's own code), and an error reply is raised as the public
exception class of ``redis.exceptions`` that redis-py raises for it (:func:`error_for`:
``NOSCRIPT``, ``WRONGPASS``, ``LOADING``...), so the loop's connection and the thread's client
agree on both: a server that cannot serve (loading, refusing the password, full of clients)
is a ``ConnectionError`` to both, the store unavailable; any other error reply a
``ResponseError``.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import redis
import redis.asyncio
import redis.exceptions

#: A command sent and the future of its reply (None: a reply to read and drop, the script's
#: load), its bytes, the loop time by which it must be answered, whether it was sent again
#: after ``NOSCRIPT``, and how many script loads the connection had sent when it was sent.
_Entry = tuple["asyncio.Future[Any] | None", bytes, float, bool, int]

#: Bytes kept between reads: a reply split across reads waits in the buffer; more than this
#: unfinished is no reply to an admission (the largest, the run-time flags, would name about
#: two million repositories), and the connection fails rather than grow without bound.
MAX_BUFFER = 64 << 20


class ErrorReply(str):
    """An error reply's message (``-ERR ...``), kept apart from a status or bulk string."""

    __slots__ = ()


def pack(args: Sequence[str | int]) -> bytes:
    """One command in RESP, as redis-py's ``pack_command`` writes it (``str`` as UTF-8, ``int``
    in decimal), in one buffer: the admission's arguments are a few short strings, so the
    join costs a fraction of the library's per-argument encoder (a test compares the two)."""
    return b"*%d\r\n" % len(args) + segments(args)


def segments(args: Sequence[str | int]) -> bytes:
    """The arguments of a command in RESP, without the count that heads it (see :func:`pack`)."""
    parts = []
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def parse(data: bytes, pos: int) -> tuple[Any, int] | None:
    """The RESP2 reply that starts at ``data[pos]`` and where the next one starts; None while
    it is incomplete. Strings are decoded (UTF-8), as redis-py's ``decode_responses`` does;
    nil is None; an error is an :class:`ErrorReply`. ValueError on anything else."""
    end = data.find(b"\r\n", pos)
    if end < 0:
        return None
    kind = data[pos]
    if kind == 0x24:  # $ bulk string
        size = int(data[pos + 1:end])
        if size < 0:
            return None, end + 2
        stop = end + 2 + size
        if len(data) < stop + 2:
            return None
        if data[stop:stop + 2] != b"\r\n":
            raise ValueError("a bulk string longer than its length")
        return data[end + 2:stop].decode(), stop + 2
    if kind == 0x2A:  # * array
        count = int(data[pos + 1:end])
        if count < 0:
            return None, end + 2
        items: list[Any] = []
        at = end + 2
        for _ in range(count):
            found = parse(data, at)
            if found is None:
                return None
            items.append(found[0])
            at = found[1]
        return items, at
    line = data[pos + 1:end].decode()
    if kind == 0x2B:  # + status
        return line, end + 2
    if kind == 0x3A:  # : integer
        return int(line), end + 2
    if kind == 0x2D:  # - error
        return ErrorReply(line), end + 2
    raise ValueError(f"an unknown reply type {bytes([kind])!r}")


#: Error replies by their first word, raised as redis-py raises them (the same public classes).
ERROR_CODES: dict[str, type[redis.exceptions.RedisError]] = {
    "NOSCRIPT": redis.exceptions.NoScriptError,
    "WRONGPASS": redis.exceptions.AuthenticationError,
    "NOAUTH": redis.exceptions.AuthenticationError,
    "LOADING": redis.exceptions.BusyLoadingError,
    "READONLY": redis.exceptions.ReadOnlyError,
    "OOM": redis.exceptions.OutOfMemoryError,
    "NOPERM": redis.exceptions.NoPermissionError,
    "EXECABORT": redis.exceptions.ExecAbortError,
    "TRYAGAIN": redis.exceptions.TryAgainError,
    "CLUSTERDOWN": redis.exceptions.ClusterDownError,
    "MASTERDOWN": redis.exceptions.MasterDownError,
}
#: ``ERR`` replies whose message names a server that cannot serve this client (the store's
#: commands are ``AUTH``, ``SELECT``, ``SCRIPT LOAD`` and ``EVALSHA``: no module, no cluster).
ERR_MESSAGES: dict[str, type[redis.exceptions.RedisError]] = {
    "max number of clients reached": redis.exceptions.MaxClientsReachedError,
    "invalid password": redis.exceptions.AuthenticationError,
    "AUTH <password> called without any password configured for the default user. Are you sure your "
    "configuration is correct?": redis.exceptions.AuthenticationError,
    "Client sent AUTH, but no password is set": redis.exceptions.AuthenticationError,
    "wrong number of arguments for 'auth' command": redis.exceptions.AuthenticationWrongNumberOfArgsError,
    "wrong number of arguments for 'AUTH' command": redis.exceptions.AuthenticationWrongNumberOfArgsError,
}


_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def error_for(reply: str) -> redis.exceptions.RedisError:
    """The exception for an error reply (``-CODE message``): its code's class, else a
    ``ResponseError``; the message without its code, the code as ``status_code``."""
    code, _, message = reply.partition(" ")
    if code == "ERR":
        return ERR_MESSAGES.get(message, redis.exceptions.ResponseError)(message, status_code=code)
    found = ERROR_CODES.get(code)
    if found is not None:
        return found(message, status_code=code)
    return redis.exceptions.ResponseError(reply, status_code=code if _CODE.fullmatch(code) else None)


def _copy(exc: BaseException) -> BaseException:
    """The same failure for another waiter (an exception instance is raised in one place)."""
    return type(exc)(*exc.args)


class _Connection(asyncio.Protocol):
    """One connection to Redis: commands in flight in order, their replies matched in order.

    Every command carries its deadline (the store's timeout from when its admission began).
    One timer watches the commands in flight, re-armed lazily when it fires (not per command):
    when one is still unanswered at its deadline the server is not answering,
    and the connection fails: every admission waiting on it, sent or queued, gets a
    TimeoutError, and the connection is closed, never used again (a reply arriving late would
    otherwise answer the wrong command). A lost connection, a malformed reply or a reply
    nothing asked for fail it the same way. An admission cancelled while its command is in
    flight leaves its place: its reply is read and dropped, so the connection stays in step;
    one cancelled before its command was written is never sent.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, load: bytes, forget: Callable[[_Connection], None]) -> None:
        self._loop = loop
        self._load = load
        self._forget = forget
        self._transport: asyncio.Transport | None = None
        self._sent: deque[_Entry] = deque()
        self._queued: list[_Entry] = []
        self._buffer = b""
        self._timer: asyncio.TimerHandle | None = None
        self._loads = 0
        #: Why the connection can no longer be used (None while it can).
        self.failed: BaseException | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not isinstance(transport, asyncio.Transport):
            raise TypeError("internal error: transport is not asyncio.Transport")
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(redis.ConnectionError("Connection closed by server." if exc is None
                                        else f"Connection lost: {type(exc).__name__}: {exc}"))

    def data_received(self, data: bytes) -> None:
        if self._buffer:
            data = self._buffer + data
            self._buffer = b""
        pos, size = 0, len(data)
        try:
            while pos < size:
                if not self._sent:
                    raise ValueError("a reply that nothing asked for")
                found = parse(data, pos)
                if found is None:
                    break
                pos = found[1]
                self._reply(found[0])
        except (ValueError, UnicodeDecodeError) as exc:
            self.fail(redis.InvalidResponse(f"Protocol error: {exc}"))
            return
        if pos < size:
            if size - pos > MAX_BUFFER:
                self.fail(redis.InvalidResponse("Protocol error: a reply larger than any the store asks for"))
                return
            self._buffer = data[pos:]
        if self._queued and self.failed is None:
            self._flush()

    # -- commands ----------------------------------------------------------------------------

    def send(self, command: bytes, deadline: float) -> asyncio.Future[Any]:
        """The future of ``command``'s reply (its value, or the error the reply names)."""
        future: asyncio.Future[Any] = self._loop.create_future()
        if self.failed is not None:
            future.set_exception(_copy(self.failed))
        else:
            self._push((future, command, deadline, False, self._loads))
        return future

    def _push(self, entry: _Entry) -> None:
        """Write now when nothing is in flight, else wait for the next reply (group commit)."""
        if self._sent or self._queued:
            self._queued.append(entry)
            return
        if self._transport is None:
            raise RuntimeError("internal error: self._transport unset")
        self._transport.write(entry[1])
        self._sent.append(entry)
        if self._timer is None:
            self._timer = self._loop.call_at(entry[2], self._check)

    def _flush(self) -> None:
        """The waiting commands in one write (those whose admission was not given up meanwhile)."""
        entries = [entry for entry in self._queued if entry[0] is None or not entry[0].done()]
        self._queued = []
        if not entries:
            return
        if self._transport is None:
            raise RuntimeError("internal error: self._transport unset")
        self._transport.write(b"".join(entry[1] for entry in entries))
        self._sent.extend(entries)
        first = min(entry[2] for entry in entries)
        if self._timer is None or self._timer.when() > first:  # (a resend keeps its earlier deadline)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(first, self._check)

    def _reply(self, value: Any) -> None:
        """The reply to the oldest command in flight. ``NOSCRIPT`` (a server that lost its
        scripts: a restart, ``SCRIPT FLUSH``) ran nothing: the script is loaded, once for the
        commands sent before that load, and the command sent again, once."""
        future, command, deadline, again, loads = self._sent.popleft()
        if future is None or future.done():
            return  # the script's load, or an admission given up: read and dropped
        if type(value) is ErrorReply:
            if not again and value.startswith("NOSCRIPT"):
                if loads == self._loads:
                    self._loads += 1
                    self._push((None, self._load, deadline, True, self._loads))
                self._push((future, command, deadline, True, self._loads))
                return
            future.set_exception(error_for(value))
            return
        future.set_result(value)

    def _check(self) -> None:
        """The watchdog: fail the connection once a command in flight is past its deadline
        (the oldest, but for a command sent again after ``NOSCRIPT``, which keeps its own)."""
        self._timer = None
        if not self._sent or self.failed is not None:
            return
        deadline = min(entry[2] for entry in self._sent)
        if self._loop.time() + 0.001 >= deadline:
            self.fail(TimeoutError())
        else:
            self._timer = self._loop.call_at(deadline, self._check)

    def fail(self, exc: BaseException) -> None:
        """Never use this connection again: every admission waiting on it fails with ``exc``."""
        if self.failed is not None:
            return
        self.failed = exc
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting = [*self._sent, *self._queued]
        self._sent.clear()
        self._queued = []
        self._buffer = b""
        for future, *_ in waiting:
            if future is not None and not future.done():
                future.set_exception(_copy(exc))
        if self._transport is not None:
            self._transport.abort()
        self._forget(self)


class LoopClient:
    """The admissions' connection of one event loop (it lives on that loop).

    One connection, opened on first use and again after it failed (a connection lost, a
    timeout: never reused): TCP, or TLS with the URL's options (``rediss://``, the configured
    CA), then ``AUTH`` with the store's password and ``SELECT`` of the URL's database, all
    within the admission's deadline. Admissions that need it while it opens wait for the same
    opening.

    An async generator (:meth:`_keep`) holds it and closes it in its ``finally``: the loop's
    own shutdown (``asyncio.run`` and mitmproxy call ``shutdown_asyncgens`` before closing the
    loop) then releases the connection on the loop, with no task left pending and no unclosed
    socket, even when the store is closed only after its loop has gone.
    """

    def __init__(self, url: str, options: dict[str, Any], loop: asyncio.AbstractEventLoop, load: bytes) -> None:
        self.loop = loop
        self._load = load
        pool = redis.asyncio.ConnectionPool.from_url(url, **options)
        template = pool.connection_class(**pool.connection_kwargs)  # no I/O: what the URL and options name
        self._host = str(template.host)
        self._port = int(template.port)  # type: ignore[attr-defined]
        self._handshake: list[bytes] = []
        if template.password is not None:
            who = [template.username] if template.username else []
            self._handshake.append(pack(["AUTH", *who, template.password]))
        if template.db:
            self._handshake.append(pack(["SELECT", template.db]))
        self._tls = template.ssl_context if isinstance(template, redis.asyncio.SSLConnection) else None
        #: The connection admissions use now (None before the first, or once it failed).
        self.connection: _Connection | None = None
        self._connections: set[_Connection] = set()
        self._opening: asyncio.Task[_Connection] | None = None
        self._keeper: AsyncGenerator[None] | None = self._keep()
        self._started = False

    async def _keep(self) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            # Every connection aborted in this one step (a TLS one too: Redis needs no
            # close_notify), then one pass of the loop, in which the transports close their
            # sockets, so the sockets are closed when this ends.
            if self._opening is not None:
                self._opening.cancel()
            for connection in list(self._connections):
                connection.fail(redis.ConnectionError("the state store is closed"))
            self.connection = None
            await asyncio.sleep(0)

    def _forgotten(self, connection: _Connection) -> None:
        self._connections.discard(connection)
        if self.connection is connection:
            self.connection = None

    async def open(self, deadline: float) -> _Connection:
        """The connection, opened now if there is none (one opening shared by every waiter)."""
        if not self._started and self._keeper is not None:
            self._started = True
            await anext(self._keeper)  # registered with the loop (its first step runs without suspending)
        if self._keeper is None:
            raise redis.ConnectionError("the state store is closed")
        task = self._opening
        if task is None:
            task = self._opening = self.loop.create_task(self._open(deadline))
            task.add_done_callback(self._opened)
        return await asyncio.shield(task)

    def _opened(self, task: asyncio.Task[_Connection]) -> None:
        self._opening = None
        if not task.cancelled() and task.exception() is None:
            self.connection = task.result()

    async def _open(self, deadline: float) -> _Connection:
        connection = _Connection(self.loop, self._load, self._forgotten)
        self._connections.add(connection)
        try:
            async with asyncio.timeout_at(deadline):
                await self.loop.create_connection(lambda: connection, self._host, self._port,
                                                  ssl=None if self._tls is None else self._tls.get())
                for reply in [connection.send(command, deadline) for command in self._handshake]:
                    await reply
        except TimeoutError:
            connection.fail(TimeoutError())
            raise
        except OSError as exc:  # refused, reset, a certificate not verified
            connection.fail(redis.ConnectionError(str(exc)))
            raise redis.ConnectionError(f"Error connecting to {self._host}:{self._port}: {exc}") from None
        except BaseException as exc:  # the AUTH refused (redis-py's AuthenticationError), cancelled
            connection.fail(redis.ConnectionError(str(exc)))
            raise
        return connection

    def close(self, timeout: float) -> None:
        """Release the connections on their loop, from wherever this is called."""
        keeper, self._keeper = self._keeper, None
        if keeper is None or not self._started or self.loop.is_closed():
            return  # nothing connected, or the loop's shutdown closed the keeper (and the client)
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:  # a callback on the loop (mitmproxy's ``done``): the sockets closed now
            task = asyncio.Task(keeper.aclose(), loop=self.loop, eager_start=True)
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)
        elif self.loop.is_running():  # the loop runs in another thread
            asyncio.run_coroutine_threadsafe(keeper.aclose(), self.loop).result(timeout + 1.0)
        elif running is None:
            self.loop.run_until_complete(keeper.aclose())


#: Closing tasks of loop clients closed from a callback on their own loop (kept until done:
#: the loop holds only a weak reference to a task).
_CLOSING: set[asyncio.Task[None]] = set()

