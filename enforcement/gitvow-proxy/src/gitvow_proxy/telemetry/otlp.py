"""Decisions as OpenTelemetry log records, exported over OTLP/HTTP (protobuf).

A security team reads decisions in its SIEM; the audit file stays the record of truth. The
export must never cost a request anything: records go into a bounded queue that a worker
thread of opentelemetry-sdk drains in batches. When the collector is away the queue fills,
and what does not fit is dropped and counted (``dropped``), never waited for.

What a record carries is exactly what an audit line carries: no body, no query string, no
header, never a token or canary (the audit line has none to give).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource

# Imported only where ``[audit] otlp`` is set: opentelemetry costs the other proxies nothing.

#: Verdicts an audit line can carry, by OpenTelemetry severity: allowed → INFO, staged for a
#: human → WARN, refused → ERROR (a throttled write is a refusal too).
_SEVERITY: Mapping[str, str] = {
    "allow": "INFO", "answered": "INFO", "approved": "INFO", "sent": "INFO", "would_refuse": "WARN",
    "staged": "WARN", "expired": "WARN", "rejected": "WARN",
}

#: Audit fields with an OpenTelemetry semantic convention, by their attribute name.
_SEMCONV: Mapping[str, str] = {
    "method": "http.request.method",
    "path": "url.path",
    "host": "server.address",
    "agent": "gen_ai.agent.name",
    "latency_ms": "gitvow.latency_ms",
}


def parse_headers(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` (OTEL_EXPORTER_OTLP_HEADERS' format, values percent-encoded) → a dict."""
    headers: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[key.strip().lower()] = unquote(value.strip())
    return headers


def attributes(record: Mapping[str, Any]) -> dict[str, Any]:
    """One audit line's fields as record attributes; ``None`` values left out (OTLP has no null)."""
    out: dict[str, Any] = {"event.name": "gitvow.decision"}
    for key, value in record.items():
        if value is None or key == "time":
            continue
        name = _SEMCONV.get(key, f"gitvow.{key}")
        out[name] = list(value) if isinstance(value, (list, tuple)) else value
    return out


def severity(verdict: str) -> str:
    return _SEVERITY.get(verdict, "ERROR")


@dataclass
class ExportCounts:
    """What happened to the records handed to the exporter (read by ``/metrics``)."""

    emitted: int = 0
    exported: int = 0
    dropped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: int) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


class OtlpExport:
    """Sends each decision to an OTLP/HTTP collector; ``emit`` never blocks and never raises.

    ``queue`` bounds the records waiting for the worker; past it a record is dropped and
    counted. ``timeout`` bounds each export call (the worker's, never a request's).
    """

    def __init__(self, endpoint: str, *, headers: Mapping[str, str] | None = None, queue: int = 2048,
                 batch: int = 256, delay: float = 1.0, timeout: float = 5.0, service: str = "gitvow-proxy") -> None:
        self.endpoint = endpoint
        self.counts = ExportCounts()
        self._limit = queue
        self._pending = 0
        self._lock = threading.Lock()
        exporter = OTLPLogExporter(endpoint=endpoint, headers=dict(headers or {}), timeout=timeout)
        self._provider = LoggerProvider(resource=Resource.create({"service.name": service}))
        self._provider.add_log_record_processor(BatchLogRecordProcessor(
            _Counting(exporter, self), schedule_delay_millis=delay * 1000, max_export_batch_size=batch,
            max_queue_size=queue))
        self._logger = self._provider.get_logger("gitvow.audit")

    def emit(self, record: Mapping[str, Any]) -> None:
        """Queue one decision (an audit line's fields); drop and count it when the queue is full."""
        with self._lock:
            if self._pending >= self._limit:
                self.counts.add(emitted=1, dropped=1)
                return
            self._pending += 1
        self.counts.add(emitted=1)
        text = severity(str(record.get("verdict", "")))
        try:
            self._logger.emit(severity_number=SeverityNumber[text], severity_text=text,
                              body=_summary(record), attributes=attributes(record), event_name="gitvow.decision")
        except Exception:  # telemetry never decides a request
            self._settled(1, ok=False)

    def _settled(self, count: int, *, ok: bool) -> None:
        with self._lock:
            self._pending = max(0, self._pending - count)
        self.counts.add(**({"exported": count} if ok else {"dropped": count}))

    def flush(self, timeout: float = 5.0) -> None:
        self._provider.force_flush(int(timeout * 1000))

    def close(self) -> None:
        self._provider.shutdown()


def _summary(record: Mapping[str, Any]) -> str:
    operations = ",".join(record.get("operations") or ()) or "-"
    reason = f" reason={record['reason']}" if record.get("reason") else ""
    return f"{record.get('verdict')} {operations} on {record.get('repo') or '-'} by {record.get('agent') or '-'}{reason}"


class _Counting(LogRecordExporter):
    """The OTLP exporter, counting each batch as exported or dropped for :class:`OtlpExport`."""

    def __init__(self, inner: OTLPLogExporter, owner: OtlpExport) -> None:
        self._inner, self._owner = inner, owner

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        try:
            result = self._inner.export(batch)
        except Exception:
            result = LogRecordExportResult.FAILURE
        self._owner._settled(len(batch), ok=result is LogRecordExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def from_settings(endpoint: str, headers_env: str | None, queue: int) -> OtlpExport:
    """The exporter ``[audit] otlp`` names; headers come from the environment, never the file."""
    headers = parse_headers(os.environ.get(headers_env, "")) if headers_env else {}
    return OtlpExport(endpoint, headers=headers, queue=queue)
