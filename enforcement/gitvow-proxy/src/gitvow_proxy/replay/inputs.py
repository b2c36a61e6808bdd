"""What ``gitvow replay`` reads: mitmproxy flow files, HAR files and gitvow's audit log.

Flow files and HAR go through mitmproxy's own readers: flow files through its tnetstring
parser and flow-format migration, reading only the fields replay uses (:mod:`.flowfile`),
HAR through ``mitmproxy.io.har``, large files on every core (:mod:`.parallel`), and
whatever that cannot read through ``mitmproxy.io.FlowReader``, whose error is reported; the
audit log is gitvow's own JSON lines. Each
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
from datetime import datetime
from pathlib import Path
from typing import Any

from gitvow.errors import GitvowError
from gitvow.request import Request
from gitvow_proxy.record import METADATA_KEY
from gitvow_proxy.replay.flowfile import FlowFields, client_id

#: Verdicts that let the request through (the rest refuse it).
PASSING = frozenset({"allow", "tunnel"})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One decision, as the audit line states it."""

    verdict: str  # allow | deny | throttle | tunnel | refuse
    reason: str | None
    stage: str
    operations: tuple[str, ...] = ()
    repo: str | None = None

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
    except ValueError:
        return False  # a HAR's first line is "{" alone
    return isinstance(line, dict) and "verdict" in line and "method" in line


def read(path: Path, *, agent: str | None = None, workers: int | None = None) -> Iterator[Recorded]:
    """Every request in ``path`` (a flow file, a HAR file or an audit log); raises InputError.

    ``workers``: how many processes read a flow file or HAR file (None: one per core when the
    file is large enough to gain from it, see :mod:`.parallel`; 1: this process alone)."""
    try:
        audit = _is_audit_log(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if audit:
        yield from read_audit(path)
    else:
        yield from read_flows(path, agent=agent, workers=workers)


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
    reads large ones on every core; anything it cannot read goes through ``FlowReader``,
    whose error is the one reported)."""
    from mitmproxy import exceptions

    from gitvow_proxy.replay import parallel

    try:
        seen: Iterable[Seen] | None = parallel.read(path, workers)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        yield from _resolve(path, seen if seen is not None else _stream(path), agent)
    except exceptions.FlowReadException as exc:
        raise InputError(f"{path}: not a readable mitmproxy flow file or HAR file: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: a flow's gitvow metadata is malformed: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _stream(path: Path) -> Iterator[Seen]:
    """mitmproxy's ``FlowReader``, one flow after the other."""
    from mitmproxy.io import FlowReader

    with path.open("rb") as fo:
        for index, flow in enumerate(FlowReader(fo).stream()):
            if (item := seen_from_flow(index, flow)) is not None:
                yield item


def _resolve(path: Path, seen: Iterable[Seen], agent: str | None) -> Iterator[Recorded]:
    """Who sent each flow, and what the recording says was decided, in file order."""
    users: dict[str, str] = {}  # client connection id → the user of its CONNECT
    for item in seen:
        if item.request is None:
            if item.user is not None and item.client is not None:
                users[item.client] = item.user
            continue
        meta = item.meta
        recorded = policy = None
        who = item.user or (users.get(item.client) if item.client is not None else None) or agent
        withheld = False
        if isinstance(meta, dict):
            who = meta.get("agent") or who
            recorded = Outcome(str(meta["verdict"]), meta.get("reason"), str(meta.get("stage", "")),
                               tuple(meta.get("operations") or ()), meta.get("repo"))
            withheld = bool(meta.get("body_withheld"))
            stamp = meta.get("policy")
            if isinstance(stamp, dict):
                policy = (str(stamp.get("path", "")), str(stamp.get("sha256", "")))
        yield Recorded(f"{path}#{item.index + 1}", item.time, who, item.request, recorded,
                       body_withheld=withheld, policy=policy)


def _audit_time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_audit(path: Path) -> Iterator[Recorded]:
    """gitvow's audit log: one decision per line, without bodies or headers."""
    try:
        with path.open(encoding="utf-8") as fo:
            for number, line in enumerate(fo, 1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    data = json.loads(line)
                    host, _, port = str(data["host"]).rpartition(":")
                    request = Request(method=str(data["method"]), host=host.lower(), path=str(data["path"]),
                                      port=int(port), scheme="https" if port != "80" else "http")
                    operations = tuple(str(op) for op in data.get("operations") or ())
                    recorded = Outcome(str(data["verdict"]), data.get("reason"), str(data.get("stage", "")),
                                       operations, data.get("repo"))
                    when = _audit_time(str(data["time"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise InputError(f"{where}: not an audit line: {type(exc).__name__}: {exc}") from None
                who = data.get("agent")  # an unauthenticated line stays unauthenticated
                classified = (operations, data.get("repo")) if operations else None
                yield Recorded(where, when, who, request, recorded, classified=classified)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc.reason}") from None
