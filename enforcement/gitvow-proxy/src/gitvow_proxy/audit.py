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

import json
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gitvow_proxy.approvals import Approval

if TYPE_CHECKING:
    from gitvow_proxy.telemetry.otlp import OtlpExport


class AuditLog:
    """Appends JSON lines to a file (``-`` is standard error); line-buffered, thread-safe.

    With ``otlp``, each line is also handed to the OpenTelemetry exporter, which queues it
    and never blocks (:mod:`gitvow_proxy.telemetry.otlp`)."""

    def __init__(self, path: str, *, otlp: OtlpExport | None = None) -> None:
        self.path = path
        self.otlp = otlp
        self._lock = threading.Lock()
        self._owned = path != "-"
        self._second, self._stamp = -1, ""
        if self._owned:
            target = Path(path).expanduser()
            target.parent.mkdir(parents=True, exist_ok=True)
            self._stream: IO[str] = target.open("a", encoding="utf-8", buffering=1)
        else:
            self._stream = sys.stderr

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
        record: dict[str, Any] = {
            "time": f"{self._stamp}.{int((now - second) * 1000):03d}Z",
            "agent": agent,
            "host": host,
            "method": method,
            "path": path.split("?", 1)[0],
            "operations": list(operations),
            "repo": repo,
            "verdict": verdict,
            "reason": reason,
            "stage": stage,
            "latency_ms": round(latency * 1000, 3),
        }
        if note:
            record["note"] = note
        if approval:
            record["approval"] = approval
        if by:
            record["by"] = by
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._stream.write(line)
        if self.otlp is not None:
            self.otlp.emit(record)

    def close(self) -> None:
        if self.otlp is not None:
            self.otlp.close()
        if self._owned:
            with self._lock:
                self._stream.close()


def audit_approval(log: AuditLog, approval: Approval, verdict: str, *, by: str | None = None,
                   reason: str | None = None, note: str | None = None) -> None:
    """One approval step as an audit line: where the request goes, never its body."""
    host = approval.url.split("://", 1)[-1].partition("/")[0]
    log.write(agent=approval.agent, host=host, method=approval.method, path=approval.target.partition(" ")[2],
              operations=approval.operations, repo=approval.repo, verdict=verdict, reason=reason, stage="approval",
              note=note, approval=approval.id, by=by)
