"""OTLP export of decisions, against a loopback OTLP/HTTP receiver that decodes the protobuf."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
from otlp_receiver import Receiver, running_receiver

from gitvow_proxy.telemetry.otlp import OtlpExport, attributes, parse_headers, severity


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as server:
        yield server


def _line(verdict: str, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"time": "2026-12-01T00:00:00.000Z", "agent": "bot", "host": "api.github.com",
                              "method": "PUT", "path": "/repos/team/app/pulls/3/merge", "operations": ["pr.merge"],
                              "repo": "team/app", "verdict": verdict, "reason": None, "stage": "policy",
                              "latency_ms": 0.12}
    record.update(extra)
    return record


def test_each_decision_is_a_log_record_with_semantic_attributes(receiver: Receiver) -> None:
    export = OtlpExport(receiver.url, headers={"authorization": "Bearer collector-key"}, delay=0.05)
    export.emit(_line("allow", method="GET", path="/repos/team/app", operations=["read"]))
    export.emit(_line("staged", reason="hard_deny", approval="7K3F2Q"))
    export.emit(_line("deny", reason="mode_denied"))
    export.flush()
    export.close()
    assert [r["severity"] for r in receiver.records] == ["INFO", "WARN", "ERROR"]
    assert [r["number"] for r in receiver.records] == [9, 13, 17]
    staged = receiver.records[1]
    assert staged["service"] == "gitvow-proxy"
    assert staged["event_name"] == "gitvow.decision"
    assert staged["attributes"]["http.request.method"] == "PUT"
    assert staged["attributes"]["url.path"] == "/repos/team/app/pulls/3/merge"
    assert staged["attributes"]["server.address"] == "api.github.com"
    assert staged["attributes"]["gen_ai.agent.name"] == "bot"
    assert staged["attributes"]["gitvow.operations"] == ["pr.merge"]
    assert staged["attributes"]["gitvow.reason"] == "hard_deny"
    assert staged["attributes"]["gitvow.approval"] == "7K3F2Q"
    assert "reason=hard_deny" in staged["body"]
    assert receiver.headers_seen[0]["authorization"] == "Bearer collector-key"
    assert receiver.paths == ["/v1/logs"] * len(receiver.paths)
    assert export.counts.exported == 3 and export.counts.dropped == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_collector_outage_drops_and_counts_without_blocking() -> None:
    export = OtlpExport(f"http://127.0.0.1:{_closed_port()}/v1/logs", queue=50, batch=10, delay=0.01, timeout=0.5)
    for _ in range(400):
        export.emit(_line("allow"))
    assert export.counts.emitted == 400
    deadline = time.monotonic() + 30
    while export.counts.exported + export.counts.dropped < 400 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert export.counts.exported == 0
    assert export.counts.dropped == 400
    export.close()


def test_records_never_carry_a_body_query_or_header() -> None:
    attrs = attributes(_line("deny", reason="canary_egress"))
    assert set(attrs) <= {"event.name", "gen_ai.agent.name", "server.address", "http.request.method", "url.path",
                          "gitvow.operations", "gitvow.repo", "gitvow.verdict", "gitvow.reason", "gitvow.stage",
                          "gitvow.latency_ms"}
    assert "time" not in attrs and "gitvow.time" not in attrs


def test_severity_and_headers() -> None:
    assert severity("allow") == "INFO" and severity("staged") == "WARN"
    assert severity("deny") == "ERROR" and severity("throttled") == "ERROR"
    assert parse_headers("Authorization=Bearer%20k, x-team = sec ,bad") == {"authorization": "Bearer k",
                                                                             "x-team": "sec"}
