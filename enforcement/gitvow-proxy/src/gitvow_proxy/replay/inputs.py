"""What ``gitvow replay`` reads: mitmproxy flow files, HAR files and gitvow's audit log.

Flow files and HAR go through mitmproxy's own readers: flow files through its tnetstring
parser and flow-format migration, reading only the fields replay uses (:mod:`.flowfile`),
HAR through ``mitmproxy.io.har``, large files on every core (:mod:`.parallel`); what they
cannot read is refused in one line naming the file (never a traceback, never an allocation
of what a damaged file announces); the audit log is gitvow's own JSON lines
(:mod:`.auditlog`). Each
becomes a :class:`Recorded`: the request (or, for an audit line, the operations and
repository found at the time), who sent it, when, and — when the file says — what was
decided then.

Who sent it: a flow written by ``gitvow proxy --record`` says so in its metadata; a plain
``mitmdump -w`` recording carries the ``Proxy-Authorization`` of the request or of its
connection's CONNECT, of which only the user name is read (the secret is never checked nor
kept); otherwise ``--agent``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvow.errors import GitvowError
from gitvow.relay import APPROVAL_EXPIRED, APPROVAL_REJECTED
from gitvow.request import Request
from gitvow_proxy.record import METADATA_KEY
from gitvow_proxy.replay.flowfile import FlowFields, client_id

#: Verdicts that let the request through (the rest refuse it): a request a human approved and
#: the proxy sent (``sent``), and an identical retry answered with that send's response
#: (``answered``), passed too.
PASSING = frozenset({"allow", "tunnel", "sent", "answered"})
#: The refusals that are a human's answer to a staged request (or the lack of one).
APPROVAL_REASONS = frozenset({APPROVAL_REJECTED, APPROVAL_EXPIRED})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One decision, as the audit line states it."""

    verdict: str  # allow | deny | throttle | tunnel | refuse; for a staged request: its final step
    reason: str | None
    stage: str
    operations: tuple[str, ...] = ()
    repo: str | None = None
    #: Put before a human by the approval relay: the verdict is the human's (or the proxy's
    #: send of what the human approved), not the policy's alone.
    held: bool = False

    @property
    def allowed(self) -> bool:
        return self.verdict in PASSING

    def key(self) -> tuple[str, str | None]:
        return self.verdict, self.reason

    def label(self) -> str:
        return self.verdict if self.reason is None else f"{self.verdict} ({self.reason})"


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request to re-decide."""

    source: str  # FILE#N
    time: float
    agent: str | None
    request: Request
    #: The decision made when it was recorded, when the file says.
    recorded: Outcome | None = None
    #: Audit lines: the operations and repository found then (no body to classify again).
    classified: tuple[tuple[str, ...], str | None] | None = None
    #: The recording withheld the body (it held a secret); a placeholder stands in for it.
    body_withheld: bool = False
    #: The policy file the recording was made under (path, sha256), when the file says.
    policy: tuple[str, str] | None = None
    #: Not a request: an operator's act in the audit log, a repository paused (True) or
    #: resumed (False) at run time, replayed into both sides' state at its time.
    act: tuple[str, bool] | None = None


class InputError(GitvowError):
    """A file replay cannot read; names the file."""


def _basic_user(header: str) -> str | None:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic" or not value:
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    name, sep, _secret = decoded.partition(":")
    return name if sep and name else None


def _is_audit_log(path: Path) -> bool:
    with path.open("rb") as fo:
        first = fo.readline(1 << 20).strip()
    if not first.startswith(b"{"):
        return False
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return False  # a HAR's first line is "{" alone
    return isinstance(line, dict) and "verdict" in line and "method" in line


def read(path: Path, *, agent: str | None = None, workers: int | None = None) -> Iterator[Recorded]:
    """Every request in ``path`` (a flow file, a HAR file or an audit log); raises InputError,
    one line naming the file and what is wrong, for anything that is not such a file with at
    least one request in it.

    ``workers``: how many processes read a flow file or HAR file (None: one per core when the
    file is large enough to gain from it, see :mod:`.parallel`; 1: this process alone)."""
    from gitvow_proxy.replay.auditlog import read_audit

    try:
        if path.stat().st_size == 0:
            raise InputError(f"{path}: the file is empty: nothing to replay")
        audit = _is_audit_log(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    count = 0
    try:
        for item in read_audit(path) if audit else read_flows(path, agent=agent, workers=workers):
            count += item.act is None
            yield item
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{path}: nested deeper than a recording is: not read") from None
    except MemoryError:
        raise InputError(f"{path}: a value too large to read") from None
    except Exception as exc:  # a hostile or damaged file is bad input, never a crash
        raise InputError(f"{path}: not a readable recording: {type(exc).__name__}: {_one_line(exc)}") from None
    if count == 0:
        raise InputError(f"{path}: no request to replay in it")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass(frozen=True, slots=True)
class Seen:
    """One flow as read, before its agent is known (that needs the file's earlier CONNECTs)."""

    index: int  # its place in the file, from 0
    request: Request | None  # None: a CONNECT
    time: float
    user: str | None  # the user name of its Proxy-Authorization
    client: str | None  # its client connection's id, when the agent may depend on it
    meta: Any  # its gitvow metadata


def _needs_client(connect: bool, user: str | None, meta: Any) -> bool:
    if connect:
        return user is not None
    return user is None and not (isinstance(meta, dict) and meta.get("agent"))


def _request(method: str, host: str, target: str, headers: Mapping[str, str], body: bytes, port: int,
             scheme: str) -> Request:
    path_part, _, query = target.partition("?")
    return Request(method=method, host=host.lower(), path=path_part, query=query, headers=headers, body=body,
                   port=port, scheme=scheme)


def seen_from_flow(index: int, flow: object) -> Seen | None:
    """A mitmproxy flow (from ``FlowReader`` or mitmproxy's HAR reader), or None when not HTTP."""
    from mitmproxy import http

    if not isinstance(flow, http.HTTPFlow):
        return None
    req = flow.request
    header = req.headers.get("proxy-authorization", "")
    user = _basic_user(header) if header else None
    connect = req.method == "CONNECT"
    meta: Any = flow.metadata.get(METADATA_KEY)
    client = flow.client_conn.id if _needs_client(connect, user, meta) else None
    request = None if connect else _request(req.method, req.host, req.path, req.headers, req.raw_content or b"",
                                            req.port, req.scheme)
    return Seen(index, request, req.timestamp_start, user, client, meta)


def _text(value: object) -> str:
    if not isinstance(value, bytes):
        raise ValueError(f"invalid request field: {value!r}")
    return value.decode("utf-8", "surrogateescape")


def _headers(fields: list[list[bytes]]) -> dict[str, str]:
    """Header fields as ``Request`` holds them: lower-case names, and what mitmproxy's
    ``Headers.get`` answers for each (repeated fields joined with ", ", text decoded the same)."""
    headers: dict[str, str] = {}
    for name, value in fields:
        key, text = _text(name).lower(), _text(value)
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def seen_from_fields(data: bytes, index: int, flow: FlowFields) -> Seen | None:
    """A flow's fields as :mod:`.flowfile` reads them, or None when not HTTP; the same
    :class:`Seen` as :func:`seen_from_flow` gives for the flow mitmproxy would build."""
    state = flow.request
    if not flow.http or state is None:
        return None
    headers = _headers(state["headers"])
    header = headers.get("proxy-authorization", "")
    user = _basic_user(header) if header else None
    method = _text(state["method"]).upper()
    connect = method == "CONNECT"
    meta: Any = flow.metadata.get(METADATA_KEY)
    client = client_id(data, flow) if _needs_client(connect, user, meta) else None
    host, port, when, body = state["host"], state["port"], state["timestamp_start"], state["content"]
    if not isinstance(host, str) or not isinstance(port, int) or not isinstance(when, (int, float)) \
            or not isinstance(body, (bytes, type(None))):
        raise ValueError("invalid request state")
    request = None if connect else _request(method, host, _text(state["path"]), headers, body or b"", port,
                                            _text(state["scheme"]))
    return Seen(index, request, float(when), user, client, meta)


def read_flows(path: Path, *, agent: str | None = None, workers: int | None = None) -> Iterator[Recorded]:
    """A mitmproxy flow file or a HAR file, through mitmproxy's readers (:mod:`.parallel`
    reads large ones on every core; what it cannot read is an InputError saying why)."""
    from gitvow_proxy.replay import parallel

    try:
        seen: Iterable[Seen] = parallel.read(path, workers)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except parallel.Unreadable as exc:
        raise InputError(f"{path}: not a readable mitmproxy flow file or HAR file: {_one_line(exc)}") from None
    try:
        yield from _resolve(path, seen, agent)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: a flow's gitvow metadata is malformed: {type(exc).__name__}: {exc}") from None


def _resolve(path: Path, seen: Iterable[Seen], agent: str | None) -> Iterator[Recorded]:
    """Who sent each flow, and what the recording says was decided, in file order."""
    users: dict[str, str] = {}  # client connection id → the user of its CONNECT
    for item in seen:
        if item.request is None:
            if item.user is not None and item.client is not None:
                users[item.client] = item.user
            continue
        meta = item.meta
        if isinstance(meta, dict) and meta.get("approval"):
            continue  # the proxy's own send of what a human approved: part of the agent's request
        recorded = policy = None
        who = item.user or (users.get(item.client) if item.client is not None else None) or agent
        withheld = False
        if isinstance(meta, dict):
            who = meta.get("agent") or who
            reason = meta.get("reason")
            recorded = Outcome(str(meta["verdict"]), reason, str(meta.get("stage", "")),
                               tuple(meta.get("operations") or ()), meta.get("repo"), held=reason in APPROVAL_REASONS)
            withheld = bool(meta.get("body_withheld"))
            stamp = meta.get("policy")
            if isinstance(stamp, dict):
                policy = (str(stamp.get("path", "")), str(stamp.get("sha256", "")))
        yield Recorded(f"{path}#{item.index + 1}", item.time, who, item.request, recorded,
                       body_withheld=withheld, policy=policy)
