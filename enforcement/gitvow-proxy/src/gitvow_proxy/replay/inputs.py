"""What ``gitvow replay`` reads: mitmproxy flow files, HAR files and gitvow's audit log.

Flow files and HAR go through mitmproxy's own reader (``mitmproxy.io.FlowReader``, which
reads HAR through ``mitmproxy.io.har``); the audit log is gitvow's own JSON lines. Each
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
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gitvow.errors import GitvowError
from gitvow.request import Request
from gitvow_proxy.record import METADATA_KEY

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


def read(path: Path, *, agent: str | None = None) -> Iterator[Recorded]:
    """Every request in ``path`` (a flow file, a HAR file or an audit log); raises InputError."""
    try:
        audit = _is_audit_log(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if audit:
        yield from read_audit(path)
    else:
        yield from read_flows(path, agent=agent)


def read_flows(path: Path, *, agent: str | None = None) -> Iterator[Recorded]:
    """A mitmproxy flow file or a HAR file, through mitmproxy's reader."""
    from mitmproxy import exceptions, http
    from mitmproxy.io import FlowReader

    users: dict[str, str] = {}  # client connection id → the user of its CONNECT
    try:
        with path.open("rb") as fo:
            for index, flow in enumerate(FlowReader(fo).stream()):
                if not isinstance(flow, http.HTTPFlow):
                    continue
                req = flow.request
                header = req.headers.get("proxy-authorization", "")
                user = _basic_user(header) if header else None
                if req.method == "CONNECT":
                    if user is not None:
                        users[flow.client_conn.id] = user
                    continue
                meta: Any = flow.metadata.get(METADATA_KEY)
                recorded = policy = None
                who = user or users.get(flow.client_conn.id) or agent
                withheld = False
                if isinstance(meta, dict):
                    who = meta.get("agent") or who
                    recorded = Outcome(str(meta["verdict"]), meta.get("reason"), str(meta.get("stage", "")),
                                       tuple(meta.get("operations") or ()), meta.get("repo"))
                    withheld = bool(meta.get("body_withheld"))
                    stamp = meta.get("policy")
                    if isinstance(stamp, dict):
                        policy = (str(stamp.get("path", "")), str(stamp.get("sha256", "")))
                path_part, _, query = req.path.partition("?")
                request = Request(
                    method=req.method,
                    host=req.host.lower(),
                    path=path_part,
                    query=query,
                    headers=req.headers,
                    body=req.raw_content or b"",
                    port=req.port,
                    scheme=req.scheme,
                )
                yield Recorded(f"{path}#{index + 1}", req.timestamp_start, who, request, recorded,
                               body_withheld=withheld, policy=policy)
    except exceptions.FlowReadException as exc:
        raise InputError(f"{path}: not a readable mitmproxy flow file or HAR file: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: a flow's gitvow metadata is malformed: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


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
