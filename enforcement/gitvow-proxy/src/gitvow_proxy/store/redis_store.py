"""The state store shared by several proxy replicas: Redis, through redis-py.

``[proxy] state = "redis://HOST:PORT/DB"`` (or ``rediss://`` for TLS). The password never
sits in the policy: ``[proxy] state_password_env`` or ``state_password_file`` names it.

Budget admission is one Lua script (every window trimmed, checked and, only if all have room,
appended to, in one step on the server), so replicas never race between a read and a write.
While Redis cannot be reached every call raises :class:`StoreUnavailable`, which the gates
turn into a ``state_unavailable`` refusal of the write; the store tries again at most once per
``retry_interval`` (so a dead server costs one timeout per interval, not one per request) and
logs each change of reachability once.

Budget admission also runs on the event loop (:meth:`RedisStore.admit_async`, on a
connection of the loop's own driven by a minimal asyncio protocol: see
:mod:`gitvow_proxy.store.redis_loop`): the same script, arguments, answers, errors and
bookkeeping as :meth:`RedisStore.admit`, without a worker thread's hop per write.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from gitvow_proxy.approvals import APPROVED, EXPIRED, FAILED, PENDING, REJECTED, RESTAGE, SENDING, SENT, Approval
from gitvow_proxy.store.interface import (
    FLAG_KINDS,
    TIMELINE,
    Admission,
    ApprovalError,
    Flags,
    Store,
    StoreError,
    StoreUnavailable,
    budget_amounts,
    check_decidable,
    new_canary,
    tell_expired,
)
from gitvow_proxy.store.redis_loop import LoopClient, pack, segments

log = logging.getLogger("gitvow_proxy")

T = TypeVar("T")

PREFIX = "gitvow:"

# KEYS: the flag sets to compare (ARGV[1] of them), then the windows. ARGV: how many flag sets,
# per flag set the members the caller saw (sorted, joined by newlines), then ``TIME`` (the
# window is read on the store's clock, so replicas whose clocks differ share one window) or the
# caller's now (a store opened with server_clock=False), the window, the new events' member
# prefix, then per window its limit and its amount. Returns the flag sets' members as they are
# (a table, nothing taken) when one differs from what the caller saw; false when taken; else
# the seconds (as a string: Lua numbers become integers) until the fullest window has room.
_TAKE = """
local nf = tonumber(ARGV[1])
local current = {}
local stale = false
for i = 1, nf do
  local members = redis.call('SMEMBERS', KEYS[i])
  table.sort(members)
  current[i] = table.concat(members, '\\n')
  if current[i] ~= ARGV[1 + i] then stale = true end
end
if stale then return current end
local a = 1 + nf
local now
if ARGV[a + 1] == 'TIME' then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
else
  now = tonumber(ARGV[a + 1])
end
local window = tonumber(ARGV[a + 2])
local full = false
local wait = 0
for i = nf + 1, #KEYS do
  local key = KEYS[i]
  local limit = tonumber(ARGV[a + 2 + 2 * (i - nf)])
  local amount = tonumber(ARGV[a + 3 + 2 * (i - nf)])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  if n + amount > limit then
    full = true
    local blocking = redis.call('ZRANGE', key, n + amount - 1 - limit, n + amount - 1 - limit, 'WITHSCORES')
    local w = tonumber(blocking[2]) + window - now
    if w > wait then wait = w end
  end
end
if full then return tostring(wait) end
local ttl = math.ceil(window * 1000)
for i = nf + 1, #KEYS do
  for j = 1, tonumber(ARGV[a + 3 + 2 * (i - nf)]) do
    redis.call('ZADD', KEYS[i], now, ARGV[a + 3] .. ':' .. j)
  end
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return false
"""

# KEYS[1]: the epoch key. Set once (the server's time) when the data begins; returns it.
_EPOCH = """
local clock = redis.call('TIME')
redis.call('SET', KEYS[1], tostring(tonumber(clock[1]) + tonumber(clock[2]) / 1000000), 'NX')
return redis.call('GET', KEYS[1])
"""

# KEYS[1]: a window. ARGV: ``TIME`` or the caller's now, then its length. The units in it now.
_USAGE = """
local now
if ARGV[1] == 'TIME' then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
return redis.call('ZCOUNT', KEYS[1], '(' .. tostring(now - tonumber(ARGV[2])), '+inf')
"""

# KEYS[1]: the canaries hash. ARGV: agent, a fresh token. Issues the token once, returns the kept one.
_CANARY = """
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


def redacted(url: str) -> str:
    """``url`` without any user information, for log lines and errors."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_url(url: str) -> None:
    """A ``redis://``/``rediss://`` URL fit for a policy file: no password in it."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise StoreError(f"the state store URL must start with redis:// or rediss://, got {redacted(url)}")
    if parts.password is not None:
        raise StoreError("the state store URL carries a password; name it with [proxy] state_password_env "
                         "or state_password_file instead")
    if not parts.hostname:
        raise StoreError(f"the state store URL {redacted(url)} names no host")


#: The answer of most admissions (frozen: one instance serves them all).
_TAKEN = Admission(None)


@dataclass(frozen=True, slots=True)
class _TakeCall:
    """One admission as the script :data:`_TAKE` takes it, built once for the thread's client
    and the loop's alike: the keys, the arguments, and the flag kinds compared."""

    names: list[str]
    args: list[Any]
    kinds: tuple[str, ...]

    def read(self, result: Any) -> Admission:
        """The script's answer as an :class:`Admission`."""
        if result is None:
            return _TAKEN
        if isinstance(result, list):  # the flags changed: nothing was taken
            return Admission(None, {kind: frozenset(m for m in str(members).split("\n") if m)
                                    for kind, members in zip(self.kinds, result, strict=True)})
        return Admission(max(float(result), 1.0))


@dataclass(frozen=True, slots=True)
class _PackedTake:
    """A loop admission's ``EVALSHA`` in RESP but for the arguments that change with each
    call: ``head`` (the command, the keys, the flags seen) + the clock (``TIME``, or the
    caller's now) + ``window`` + the new units' member + ``tail`` (the limits and amounts)."""

    head: bytes
    window: bytes
    tail: bytes
    call: _TakeCall

    @classmethod
    def of(cls, sha: str, call: _TakeCall) -> _PackedTake:
        flags = 1 + len(call.kinds)  # the arguments before the clock
        words: list[str | int] = ["EVALSHA", sha, len(call.names), *call.names, *call.args[:flags]]
        head = b"*%d\r\n" % (len(words) + len(call.args) - flags) + segments(words)
        return cls(head, segments(call.args[flags + 1:flags + 2]), segments(call.args[flags + 3:]), call)

    def command(self, now: float, token: str, server_clock: bool) -> bytes:
        """The whole command for one admission at ``now`` whose units are named ``token``."""
        clock = _TIME if server_clock else segments([repr(now)])
        member = f"{now:.6f}:{token}".encode()
        return b"".join((self.head, clock, self.window, b"$%d\r\n%s\r\n" % (len(member), member), self.tail))


_TIME = segments(["TIME"])


class RedisStore(Store):
    """Budget windows (sorted sets), counters (a hash), flags (sets), canaries (a hash) in Redis."""

    #: :meth:`admit_async` runs on ``redis.asyncio``, driven by the event loop.
    admits_on_loop = True

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        ca_file: str | None = None,
        timeout: float = 1.0,
        retry_interval: float = 1.0,
        server_clock: bool = True,
    ) -> None:
        check_url(url)
        self.where = redacted(url)
        #: Budget windows on the server's clock (every replica alike); False: on the ``now``
        #: the caller passes, as the other stores do (tests that set the time).
        self.server_clock = server_clock
        self.retry_interval = retry_interval
        #: Seconds a call may wait for Redis (socket and connect timeouts; the bound of a whole
        #: :meth:`admit_async`), after which the store is unreachable.
        self.timeout = timeout
        options: dict[str, Any] = {
            "password": password,
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "decode_responses": True,
        }
        if ca_file is not None:
            options["ssl_ca_certs"] = ca_file
        # One retry, of a connection error only: a pooled connection Redis closed on a restart
        # fails once, then reconnects. A timeout is not retried: it already spent the call's
        # bound (a hung Redis accepts the new connection too, so a retry would double the wait)
        # and the command may still run when Redis resumes (a retry would send the take twice).
        self._url = url
        self._async_options = options  # the loop's connection: its host, port, database, TLS (see redis_loop)
        try:
            self._redis: redis.Redis = redis.Redis.from_url(
                url, **options, retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
            redis.asyncio.Redis.from_url(url, **self._async_options)  # the loop's client accepts them too (no I/O)
        except (ValueError, redis.RedisError) as exc:
            raise StoreError(f"cannot use the state store {self.where}: {exc}") from None
        self._aclient: LoopClient | None = None
        self._packed: dict[Any, _PackedTake | Admission] = {}
        self._take = self._redis.register_script(_TAKE)
        self._load_take = pack(["SCRIPT", "LOAD", _TAKE])
        self._issue = self._redis.register_script(_CANARY)
        self._usage = self._redis.register_script(_USAGE)
        self._epoch = self._redis.register_script(_EPOCH)
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._next_try = 0.0

    # -- reachability ---------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self._down_since is None

    def _call(self, fn: Callable[[], T]) -> T:
        started = self._gate()
        try:
            result = fn()
        except redis.RedisError as exc:
            raise self._failed(exc, started) from None
        self._reached()
        return result

    def _gate(self) -> float:
        """When a call starts; StoreUnavailable at once, without trying, while the server is
        down and its retry interval has not passed (a dead server costs one timeout per interval)."""
        now = time.monotonic()
        if self._down_since is None:  # reachable (one attribute read: no lock needed for it)
            return now
        with self._lock:
            if self._down_since is not None and now < self._next_try:
                raise StoreUnavailable(f"the state store {self.where} is unreachable")
        return now

    def _failed(self, exc: Exception, started: float) -> StoreError:
        """Count a failed call and name it: StoreUnavailable for a server not reached (a
        connection error, a timeout), logged once per outage; StoreError for an error answer."""
        if not isinstance(exc, redis.ConnectionError | redis.TimeoutError | TimeoutError):
            # answered, but with an error: the pipeline refuses (internal_error)
            with self._lock:
                self.errors += 1
            return StoreError(f"the state store {self.where} answered: {type(exc).__name__}: {exc}")
        with self._lock:
            self.errors += 1
            self._next_try = time.monotonic() + self.retry_interval
            first = self._down_since is None
            if first:
                self._down_since = started
        if first:
            log.error("gitvow: the state store %s is unreachable (%s: %s); writes are refused with "
                      "state_unavailable until it is back", self.where, type(exc).__name__,
                      exc if str(exc) else f"no answer within {self.timeout}s")
        return StoreUnavailable(f"the state store {self.where} is unreachable")

    def _reached(self) -> None:
        """A call answered: log the end of an outage once."""
        if self._down_since is not None:
            with self._lock:
                since, self._down_since = self._down_since, None
            if since is not None:
                log.warning("gitvow: the state store %s is reachable again after %.1fs", self.where,
                            time.monotonic() - since)

    def _loop_client(self) -> LoopClient:
        """The running loop's client, made on first use: the loop that first awaits the store
        (mitmproxy's) owns it. Another loop may take over only once that one is closed."""
        loop = asyncio.get_running_loop()
        client = self._aclient
        if client is not None and client.loop is not loop:
            if not client.loop.is_closed():
                raise StoreError(f"the state store {self.where} is driven by another running event loop")
            client = None  # its loop is gone, and its shutdown closed the connections
        if client is None:
            client = self._aclient = LoopClient(self._url, self._async_options, loop, self._load_take)
        return client

    def ping(self) -> bool:
        """Whether Redis answers now (also how a background probe brings the store back)."""
        try:
            return bool(self._call(self._redis.ping))
        except StoreUnavailable:
            return False

    # -- the Store interface --------------------------------------------------------------

    def take(self, keys: Sequence[tuple[str, int]], now: float, window: float,
             amounts: Sequence[int] | None = None) -> float | None:
        return self._admit(None, keys, now, window, amounts).wait

    def admit(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
              amounts: Sequence[int] | None = None) -> Admission:
        return self._admit(seen, keys, now, window, amounts)

    async def admit_async(self, seen: Flags, keys: Sequence[tuple[str, int]], now: float, window: float,
                          amounts: Sequence[int] | None = None) -> Admission:
        """:meth:`admit` on the event loop: the same script, sent on the loop's connection
        (:mod:`gitvow_proxy.store.redis_loop`), the same bookkeeping as :meth:`_call`; the
        whole admission bounded by :attr:`timeout` (a hung server: StoreUnavailable then, the
        loop serving others meanwhile)."""
        packed = self._packed_take(seen, keys, window, amounts)
        if isinstance(packed, Admission):
            return packed
        command = packed.command(now, secrets.token_hex(6), self.server_clock)
        started = self._gate()
        client = self._loop_client()
        deadline = client.loop.time() + self.timeout
        try:
            connection = client.connection
            if connection is None:
                connection = await client.open(deadline)
            reply = await connection.send(command, deadline)
        except (redis.RedisError, TimeoutError) as exc:
            raise self._failed(exc, started) from None
        self._reached()
        return packed.call.read(reply)

    def _packed_take(self, seen: Flags, keys: Sequence[tuple[str, int]], window: float,
                     amounts: Sequence[int] | None) -> _PackedTake | Admission:
        """The loop's ``EVALSHA`` packed but for its time and member, kept for the next
        admissions of the same budgets on the same flags (most are: packing 17 arguments cost
        as much CPU as a quarter of the admission). Built from :meth:`_take_call`, so the
        thread's and the loop's commands are the same (a test compares them)."""
        try:
            key: Any = (tuple(map(seen.__getitem__, FLAG_KINDS)), tuple(keys),
                        None if amounts is None else tuple(amounts), window)
            packed = self._packed.get(key)
        except TypeError:  # flags not in frozensets: built each time
            key, packed = None, None
        if packed is None:
            call = self._take_call(seen, keys, 0.0, window, amounts)
            packed = call if isinstance(call, Admission) else _PackedTake.of(self._take.sha, call)
            if key is not None:
                if len(self._packed) >= 256:
                    self._packed.clear()
                self._packed[key] = packed
        return packed

    def _admit(self, seen: Flags | None, keys: Sequence[tuple[str, int]], now: float, window: float,
               amounts: Sequence[int] | None) -> Admission:
        """One script on the server: the flags compared with ``seen`` (when given), then the take."""
        call = self._take_call(seen, keys, now, window, amounts)
        if isinstance(call, Admission):
            return call
        return call.read(self._call(lambda: self._take(keys=call.names, args=call.args)))

    def _take_call(self, seen: Flags | None, keys: Sequence[tuple[str, int]], now: float, window: float,
                   amounts: Sequence[int] | None, token: str | None = None) -> _TakeCall | Admission:
        """The script's keys and arguments (the new units named ``now`` and ``token``, random
        unless given); an Admission already when no window can ever fit."""
        units = budget_amounts(keys, amounts)
        if any(limit <= 0 or amount > limit for (_, limit), amount in zip(keys, units, strict=True)):
            return Admission(window)
        kinds = FLAG_KINDS if seen is not None else ()
        member = f"{now:.6f}:{secrets.token_hex(6) if token is None else token}"
        args: list[Any] = [len(kinds), *("\n".join(sorted(seen[kind])) for kind in kinds if seen is not None),
                           self._now(now), repr(window), member]
        for (_, limit), amount in zip(keys, units, strict=True):
            args += [limit, amount]
        names = [PREFIX + "flags:" + kind for kind in kinds] + [PREFIX + "ev:" + key for key, _ in keys]
        return _TakeCall(names, args, kinds)

    def give_back(self, keys: Sequence[str], at: float, amounts: Sequence[int]) -> None:
        for key, amount in zip(keys, amounts, strict=True):
            self._give_back(PREFIX + "ev:" + key, at, amount)

    def _give_back(self, name: str, at: float, amount: int) -> None:
        # The units a take added are named after the taker's ``now`` (their score may be the
        # server's clock): found by that name, whatever time they were filed at.
        pattern = f"{at:.6f}:*"
        taken = [member for member, _score in self._call(lambda: list(self._redis.zscan_iter(name, match=pattern)))]
        if taken:
            self._call(lambda: self._redis.zrem(name, *taken[:amount]))

    def usage(self, key: str, now: float, window: float) -> int:
        # ``now`` is the replica's; with the server's clock the window is read on it, as ``take`` fills it.
        return int(self._call(lambda: self._usage(keys=[PREFIX + "ev:" + key], args=[self._now(now), repr(float(window))])))

    def _now(self, now: float) -> str:
        return "TIME" if self.server_clock else repr(now)

    def count(self, key: str, amount: int = 1) -> None:
        self._call(lambda: self._redis.hincrby(PREFIX + "counters", key, amount))

    def counters(self) -> dict[str, int]:
        values: dict[str, str] = self._call(lambda: self._redis.hgetall(PREFIX + "counters"))  # type: ignore[arg-type,return-value]
        return {key: int(value) for key, value in values.items()}

    def flags(self, kind: str) -> frozenset[str]:
        members: set[str] = self._call(lambda: self._redis.smembers(PREFIX + "flags:" + kind))  # type: ignore[arg-type,return-value]
        return frozenset(members)

    def all_flags(self) -> dict[str, frozenset[str]]:
        def run() -> list[set[str]]:
            pipe = self._redis.pipeline(transaction=False)
            for kind in FLAG_KINDS:
                pipe.smembers(PREFIX + "flags:" + kind)
            return list(pipe.execute())

        return {kind: frozenset(members) for kind, members in zip(FLAG_KINDS, self._call(run), strict=True)}

    def set_flag(self, kind: str, repo: str, on: bool) -> None:
        key = PREFIX + "flags:" + kind
        if on:
            self._call(lambda: self._redis.sadd(key, repo.lower()))
        else:
            self._call(lambda: self._redis.srem(key, repo.lower()))

    def canary(self, agent: str) -> str:
        return str(self._call(lambda: self._issue(keys=[PREFIX + "canaries"], args=[agent, new_canary()])))

    def add_tally(self, counts: dict[str, int], refusals: Sequence[str],
                  timed: Mapping[tuple[int, str], int] | None = None) -> None:
        def run() -> None:
            pipe = self._redis.pipeline(transaction=False)
            for series, n in counts.items():
                pipe.hincrby(PREFIX + "tally:decisions", series, n)
            if refusals:
                pipe.lpush(PREFIX + "tally:refusals", *refusals)
                pipe.ltrim(PREFIX + "tally:refusals", 0, 99)
            kept: dict[str, int] = {}
            for (slot, series), n in (timed or {}).items():
                for width, keep in TIMELINE:  # each bucket a hash (series → n) that expires after its span
                    key = f"{PREFIX}tally:t:{width}:{slot // width * width}"
                    pipe.hincrby(key, series, n)
                    kept[key] = keep + width
            for key, seconds in kept.items():
                pipe.expire(key, seconds)
            pipe.execute()

        self._call(run)

    def tally(self) -> tuple[dict[str, int], list[dict[str, object]]] | None:
        def run() -> tuple[dict[str, str], list[str]]:
            pipe = self._redis.pipeline(transaction=False)
            pipe.hgetall(PREFIX + "tally:decisions")
            pipe.lrange(PREFIX + "tally:refusals", 0, 99)
            counts, refusals = pipe.execute()
            return counts, refusals

        counts, refusals = self._call(run)
        return {k: int(v) for k, v in counts.items()}, [json.loads(r) for r in refusals]

    def timeline(self, width: int, first: int, buckets: int) -> dict[str, list[int]] | None:
        def run() -> list[dict[str, str]]:
            pipe = self._redis.pipeline(transaction=False)
            for index in range(buckets):
                pipe.hgetall(f"{PREFIX}tally:t:{width}:{first + index * width}")
            found: list[dict[str, str]] = pipe.execute()
            return found

        series: dict[str, list[int]] = {}
        for index, bucket in enumerate(self._call(run)):
            for name, n in bucket.items():
                series.setdefault(name, [0] * buckets)[index] += int(n)
        return series

    def epoch(self) -> float | None:
        return float(self._call(lambda: self._epoch(keys=[PREFIX + "epoch"])))

    def canaries(self) -> dict[str, str]:
        issued: dict[str, str] = self._call(lambda: self._redis.hgetall(PREFIX + "canaries"))  # type: ignore[arg-type,return-value]
        return {token: agent for agent, token in issued.items()}

    # -- approvals ----------------------------------------------------------------------------
    #
    # Each approval is one JSON document (``gitvow:approval:ID``); ``gitvow:approvals`` orders
    # every id by creation, ``gitvow:approvals:STATUS`` the ids in each status, and
    # ``gitvow:approvals:fp:FINGERPRINT`` names the latest approval of a request. Every change
    # is an optimistic transaction (WATCH … MULTI … EXEC, retried on a concurrent change), so
    # two replicas never both move one approval: in particular exactly one ``claim`` of an
    # approved approval succeeds, the exactly-once send.

    def _akey(self, approval_id: str) -> str:
        return f"{PREFIX}approval:{approval_id.upper()}"

    def _load(self, pipe: Any, approval_id: str) -> Approval | None:
        raw = pipe.get(self._akey(approval_id))
        return None if raw is None else _decode(raw)

    def _save(self, pipe: Any, approval: Approval, before: Approval | None) -> Approval:
        """Queue the writes of ``approval`` (``pipe`` in MULTI mode)."""
        pipe.set(self._akey(approval.id), _encode(approval))
        pipe.zadd(PREFIX + "approvals", {approval.id: approval.created})
        if before is not None and before.status != approval.status:
            pipe.zrem(f"{PREFIX}approvals:{before.status}", approval.id)
        pipe.zadd(f"{PREFIX}approvals:{approval.status}", {approval.id: approval.created})
        pipe.set(f"{PREFIX}approvals:fp:{approval.fingerprint}", approval.id)
        return approval

    def _transaction(self, fn: Callable[[Any], T], *watch: str) -> T:
        def run() -> T:
            result: list[T] = []

            def body(pipe: Any) -> None:
                result.clear()
                result.append(fn(pipe))

            self._redis.transaction(body, *watch)
            return result[0]

        return self._call(run)

    def stage(self, approval: Approval, now: float) -> Approval:
        fp_key = f"{PREFIX}approvals:fp:{approval.fingerprint}"

        def body(pipe: Any) -> Approval:
            latest_id = pipe.get(fp_key)
            if latest_id is not None:
                pipe.watch(self._akey(latest_id))  # a decision on it meanwhile makes this stage retry
            latest = self._load(pipe, latest_id) if latest_id is not None else None
            told = tell_expired(latest, now)
            pipe.multi()
            if told is not None:
                return self._save(pipe, told, latest)
            if latest is not None and latest.status not in RESTAGE:
                pipe.exists(fp_key)  # an EXEC with nothing queued still checks the WATCH
                return latest
            return self._save(pipe, approval.with_(updated=now), None)

        return self._transaction(body, fp_key)

    def approval(self, approval_id: str) -> Approval | None:
        raw = self._call(lambda: self._redis.get(self._akey(approval_id)))
        return None if raw is None else _decode(raw)

    def approvals(self, statuses: Collection[str] | None = None, limit: int = 200) -> list[Approval]:
        def run() -> list[Approval]:
            ids: list[str] = []
            for index in [PREFIX + "approvals"] if statuses is None else [f"{PREFIX}approvals:{s}" for s in statuses]:
                ids += [str(i) for i in self._redis.zrevrange(index, 0, limit - 1)]
            if not ids:
                return []
            raws: list[Any] = self._redis.mget([self._akey(i) for i in ids])
            found = [_decode(raw) for raw in raws if raw is not None]
            return sorted(found, key=lambda a: a.created, reverse=True)[:limit]

        return self._call(run)

    def decide(self, approval_id: str, *, approve: bool, by: str, reason: str | None, now: float) -> Approval:
        key = self._akey(approval_id)

        def body(pipe: Any) -> Approval:
            found = check_decidable(self._load(pipe, approval_id), approval_id, now)
            pipe.multi()
            return self._save(pipe, found.with_(status=APPROVED if approve else REJECTED, decided_by=by,
                                                decided_at=now, reason=reason, updated=now), found)

        return self._transaction(body, key)

    def claim(self, now: float) -> Approval | None:
        ready = f"{PREFIX}approvals:{APPROVED}"

        def body(pipe: Any) -> Approval | None:
            ids = pipe.zrange(ready, 0, 0)
            if not ids:
                return None
            found = self._load(pipe, ids[0])
            pipe.multi()
            if found is None or found.status != APPROVED:  # a stale index entry
                pipe.zrem(ready, ids[0])
                return None
            return self._save(pipe, found.with_(status=SENDING, updated=now), found)

        return self._transaction(body, ready)

    def finish(self, approval_id: str, *, sent: bool, status: int | None, content_type: str | None, body: bytes,
               now: float, reason: str | None = None) -> Approval:
        key = self._akey(approval_id)

        def run(pipe: Any) -> Approval:
            found = self._load(pipe, approval_id)
            if found is None or found.status != SENDING:
                raise ApprovalError(f"approval {approval_id} is not being sent")
            pipe.multi()
            return self._save(pipe, found.with_(status=SENT if sent else FAILED, sent_at=now, response_status=status,
                                                response_type=content_type, response_body=body, updated=now,
                                                reason=reason if reason is not None else found.reason), found)

        return self._transaction(run, key)

    def annotate(self, approval_id: str, key: str, value: str) -> None:
        self._call(lambda: self._redis.hset(self._akey(approval_id) + ":notes", key, value))

    def annotations(self, approval_id: str) -> dict[str, str]:
        found: dict[str, str] = self._call(lambda: self._redis.hgetall(self._akey(approval_id) + ":notes"))  # type: ignore[arg-type,return-value]
        return dict(found)

    def expire(self, now: float) -> list[Approval]:
        pending = f"{PREFIX}approvals:{PENDING}"

        def body(pipe: Any) -> list[Approval]:
            ids = pipe.zrange(pending, 0, -1)
            gone = [a for a in (self._load(pipe, i) for i in ids) if a is not None and a.status == PENDING
                    and a.expires <= now]
            pipe.multi()
            if not gone:
                pipe.exists(pending)
            return [self._save(pipe, a.with_(status=EXPIRED, updated=now), a) for a in gone]

        return self._transaction(body, pending)

    def pending_approvals(self) -> int:
        return int(self._call(lambda: self._redis.zcard(f"{PREFIX}approvals:{PENDING}")))

    def close(self) -> None:
        """Release both clients; the loop's on its loop (see :class:`~gitvow_proxy.store.redis_loop.LoopClient`), with or
        without a running loop here."""
        self._redis.close()
        client, self._aclient = self._aclient, None
        if client is not None:
            client.close(self.timeout)


def _encode(approval: Approval) -> str:
    data = asdict(approval)
    data["body"] = base64.b64encode(approval.body).decode()
    data["response_body"] = base64.b64encode(approval.response_body).decode()
    return json.dumps(data, separators=(",", ":"))


def _decode(raw: str | bytes) -> Approval:
    data = json.loads(raw)
    data["operations"] = tuple(data["operations"])
    data["headers"] = tuple((str(k), str(v)) for k, v in data["headers"])
    data["body"] = base64.b64decode(data["body"])
    data["response_body"] = base64.b64decode(data["response_body"])
    return Approval(**data)
