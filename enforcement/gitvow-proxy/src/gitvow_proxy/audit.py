"""The audit log: one JSON line per decision, and nothing an agent sent beyond its shape.

Fields: time, agent, host, method, path, operations, repo, verdict, reason, stage, latency_ms
(and ``note`` for decisions that are not a refusal but worth recording, such as a write the
write-surface gate would have refused when not enforcing). Each step of an approval is a line
too, with ``approval`` (its id) and, for a human's decision, ``by``: verdict ``staged``,
``approved``, ``rejected``, ``expired``, ``sent``, ``send_failed`` or ``answered`` (an
identical retry answered with the recorded response). Never a body, a query string,
a header or a secret: paths are logged without their query, since tokens travel there.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import sys
import threading
import time
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gitvow.errors import PolicyError
from gitvow_proxy.approvals import Approval

if TYPE_CHECKING:
    from gitvow_proxy.telemetry.otlp import OtlpExport


logger = logging.getLogger("gitvow_proxy")

#: The reason code of a request refused because its audit line could not be written.
AUDIT_UNAVAILABLE = "audit_unavailable"


class AuditUnavailable(PolicyError):
    """The audit log cannot be opened or written: the decision it would record is refused."""


def audit_path_problem(path: str) -> str | None:
    """Why ``path`` could not be the audit log (``None`` when it can), without creating it."""
    if path == "-":
        return None
    target = Path(path).expanduser()
    if target.is_dir():
        return f"{target} is a directory"
    if target.exists():
        return None if os.access(target, os.W_OK) else f"{target} is not writable"
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {target}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {target}: {parent} is not writable"
    return None


class AuditLog:
    """Appends JSON lines to a file (``-`` is standard error); each line one ``write`` on a
    descriptor opened ``O_APPEND`` (no buffer in the process, nothing to flush), thread-safe.

    The audit log must never be lost silently. Before each line the path is checked against
    the open file (one ``stat``): a log moved away or deleted (logrotate, an operator) is
    reopened at the configured path, so every line lands there; :meth:`reopen` does the same
    on SIGHUP. A line that cannot be written raises :class:`AuditUnavailable` and is counted
    (``errors``): the proxy then refuses the request it would have recorded (fail closed).

    With ``otlp``, each line is also handed to the OpenTelemetry exporter, which queues it
    and never blocks (:mod:`gitvow_proxy.telemetry.otlp`)."""

    def __init__(self, path: str, *, otlp: OtlpExport | None = None) -> None:
        self.path = path
        self.otlp = otlp
        self.errors = 0
        self._lock = threading.Lock()
        self._owned = path != "-"
        #: The path as opened (``~`` expanded once): checked against the open file before each line.
        self._target = str(Path(path).expanduser()) if self._owned else path
        self._second, self._stamp = -1, ""
        #: The encoded fields between the time and the latency, by their values (bounded).
        self._middles: dict[tuple[Any, ...], str] = {}
        self._identity: tuple[int, int] | None = None
        #: The open file's descriptor (``O_APPEND``): each line is one ``os.write``, no buffer to
        #: flush and nothing held back in the process when it is stopped.
        self._fd: int | None = None
        self._stream: IO[str] | None = None if self._owned else sys.stderr
        if self._owned:
            self._open()

    def _open(self) -> None:
        target = Path(self.path).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            self._fd = None
            raise AuditUnavailable(f"cannot open the audit log: {exc.strerror or exc}", source=str(target),
                                   key="audit.path") from None
        st = os.fstat(fd)
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)

    def _current(self) -> int:
        """The descriptor to write to, reopened when the path no longer names the open file
        (one ``stat`` per line: a line written after a deletion or a rotation must land at the path)."""
        try:
            st = os.stat(self._target)
            moved = (st.st_dev, st.st_ino) != self._identity
        except OSError:
            moved = True
        if moved or self._fd is None:
            self._close_stream()
            self._open()
        if self._fd is None:
            raise RuntimeError("internal error: self._fd unset")
        return self._fd

    def _close_stream(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _append(self, line: str) -> None:
        """Write one whole line (a short write is continued, as a full disk may cause)."""
        if not self._owned:
            if self._stream is None:
                raise RuntimeError("internal error: self._stream unset")
            self._stream.write(line)
            self._stream.flush()
            return
        data = line.encode()
        fd = self._current()
        while data:
            written = os.write(fd, data)
            if written <= 0:  # nothing taken: never spin, the line is not written
                raise OSError(errno.EIO, "the audit log took none of the line")
            data = data[written:]

    def reopen(self) -> None:
        """Close and open the configured path again (SIGHUP, as logrotate expects)."""
        if not self._owned:
            return
        with self._lock:
            self._close_stream()
            try:
                self._open()
            except AuditUnavailable:
                self.errors += 1

    def write(
        self,
        *,
        agent: str | None,
        host: str,
        method: str,
        path: str,
        operations: tuple[str, ...] = (),
        repo: str | None = None,
        verdict: str,
        reason: str | None = None,
        stage: str,
        latency: float = 0.0,
        note: str | None = None,
        approval: str | None = None,
        by: str | None = None,
    ) -> None:
        now = time.time()
        second = int(now)
        if second != self._second:  # formatting the date costs more than the rest of the line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        stamp = f"{self._stamp}.{int((now - second) * 1000):03d}Z"
        path = path.split("?", 1)[0]
        milliseconds = latency * 1000
        # The line is put together here rather than by json.dumps on a dict (several times the
        # cost); each value is encoded by json's own string encoder, so it is byte for byte what
        # json.dumps(record, separators=(",", ":")) writes (test_audit_log checks it).
        try:
            key = (agent, host, method, path, operations, repo, verdict, reason, stage)
            middle = self._middles.get(key)
            if middle is None:  # the same agent, host, path, repository and verdict come back
                if len(self._middles) >= _MIDDLES:
                    self._middles.clear()
                middle = self._middles[key] = (
                    f'"agent":{_text(agent)},"host":{_quote(host)},"method":{_quote(method)},"path":{_quote(path)},'
                    f'"operations":[{",".join(map(_quote, operations))}],"repo":{_text(repo)},'
                    f'"verdict":{_quote(verdict)},"reason":{_text(reason)},"stage":{_quote(stage)},"latency_ms":')
            line = (f'{{"time":"{stamp}",{middle}{_milliseconds(milliseconds)}'
                    f'{_optional("note", note)}{_optional("approval", approval)}{_optional("by", by)}}}\n')
        except (TypeError, ValueError):  # a value that is not text: json.dumps writes it as it always did
            line = json.dumps(_record(stamp, agent, host, method, path, operations, repo, verdict, reason, stage,
                                      round(milliseconds, 3), note=note, approval=approval, by=by),
                              separators=(",", ":")) + "\n"
        with self._lock:
            try:
                self._append(line)
            except OSError as exc:
                self.errors += 1
                self._close_stream()  # the next line tries the path afresh
                raise AuditUnavailable(f"cannot write the audit log: {exc.strerror or exc}", source=self.path,
                                       key="audit.path") from None
            except AuditUnavailable:
                self.errors += 1
                raise
        if self.otlp is not None:
            self.otlp.emit(_record(stamp, agent, host, method, path, operations, repo, verdict, reason, stage,
                                   round(milliseconds, 3), note=note, approval=approval, by=by))

    def close(self) -> None:
        if self.otlp is not None:
            self.otlp.close()
        with self._lock:
            self._close_stream()


#: How many distinct lines' middles an audit log keeps encoded.
_MIDDLES = 1024
#: A JSON string, as json.dumps (``ensure_ascii``) writes it.
_quote = encode_basestring_ascii


def _text(value: str | None) -> str:
    return "null" if value is None else encode_basestring_ascii(value)


def _milliseconds(value: float) -> str:
    """``round(value, 3)`` as json.dumps writes it, at half the cost: ``%.3f`` rounds the same
    binary value to the same three decimals, and without its trailing zeros it is the float's
    shortest spelling (repr) below 1e15 (test_audit_log checks this over many values)."""
    if -1e15 < value < 1e15:
        text = f"{value:.3f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    rounded = round(value, 3)
    return repr(rounded) if math.isfinite(rounded) else json.dumps(rounded)


def _record(stamp: str, agent: str | None, host: str, method: str, path: str, operations: tuple[str, ...],
            repo: str | None, verdict: str, reason: str | None, stage: str, latency_ms: float, *,
            note: str | None, approval: str | None, by: str | None) -> dict[str, Any]:
    """The audit line as a dict (for the OpenTelemetry exporter), keys in the line's order."""
    record: dict[str, Any] = {
        "time": stamp, "agent": agent, "host": host, "method": method, "path": path, "operations": list(operations),
        "repo": repo, "verdict": verdict, "reason": reason, "stage": stage, "latency_ms": latency_ms,
    }
    if note:
        record["note"] = note
    if approval:
        record["approval"] = approval
    if by:
        record["by"] = by
    return record


def _optional(key: str, value: str | None) -> str:
    """A key written only when it has a value (an empty one is left out, as before)."""
    return f',"{key}":{encode_basestring_ascii(value)}' if value else ""


def audit_approval(log: AuditLog, approval: Approval, verdict: str, *, by: str | None = None,
                   reason: str | None = None, note: str | None = None) -> None:
    """One approval step as an audit line: where the request goes, never its body.

    A step that cannot be written is logged and counted (``AuditLog.errors``), not raised:
    the step happened (a human decided, the forge answered) whether or not it was written."""
    host = approval.url.split("://", 1)[-1].partition("/")[0]
    try:
        _write_step(log, approval, verdict, host, by=by, reason=reason, note=note)
    except AuditUnavailable as exc:
        logger.error("gitvow: approval %s %s not audited: %s", approval.id, verdict, exc)


def _write_step(log: AuditLog, approval: Approval, verdict: str, host: str, *, by: str | None, reason: str | None,
                note: str | None) -> None:
    log.write(agent=approval.agent, host=host, method=approval.method, path=approval.target.partition(" ")[2],
              operations=approval.operations, repo=approval.repo, verdict=verdict, reason=reason, stage="approval",
              note=note, approval=approval.id, by=by)
