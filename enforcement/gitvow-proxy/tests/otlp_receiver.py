"""A loopback OTLP/HTTP logs receiver that decodes the protobuf and records each log record."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest


class Receiver(ThreadingHTTPServer):
    """Records every decoded log record and the headers it came with."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.records: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.raw: list[bytes] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/logs"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
        self.server.raw.append(body)
        self.server.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        for resource_logs in request.resource_logs:
            service = {a.key: a.value.string_value for a in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    attrs: dict[str, Any] = {}
                    for a in record.attributes:
                        value = a.value
                        kind = value.WhichOneof("value")
                        attrs[a.key] = ([v.string_value for v in value.array_value.values] if kind == "array_value"
                                        else getattr(value, kind))
                    self.server.records.append({"severity": record.severity_text, "number": record.severity_number,
                                                "body": record.body.string_value, "attributes": attrs,
                                                "service": service.get("service.name"),
                                                "event_name": record.event_name})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
