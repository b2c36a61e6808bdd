"""The audit addon: one audit line and one metrics count per decision the other addons made.

Placed after every addon that decides, it writes what they left on the flow
(:data:`~gitvow_proxy.flow_metadata.AUDIT_KEY`) at the end of the hook that decided it, so
each decision is written once, in the order the proxy made them. Host, path and repository are
cleaned of every secret first (:func:`~gitvow_proxy.record.clean_audited`). It also times the
upstream's answer to each forwarded request for ``gitvow_upstream_seconds``.
"""

from __future__ import annotations

import logging
import time

from mitmproxy import http, tcp, udp

from gitvow_proxy.audit import AUDIT_UNAVAILABLE, AuditUnavailable
from gitvow_proxy.cluster_view import refusal_of
from gitvow_proxy.flow_metadata import AUDIT_KEY, SENT_KEY, Audited
from gitvow_proxy.record import clean_audited, redactor_of
from gitvow_proxy.refusals import plain_refusal
from gitvow_proxy.shared import Shared
from gitvow_proxy.status import REFUSALS, series_of

log = logging.getLogger("gitvow_proxy")


#: The chart series of each (verdict, reason, stage) seen: the same few come back on every request.
_SERIES: dict[tuple[str, str | None, str], str | None] = {}


def _series(verdict: str, reason: str | None, stage: str) -> str | None:
    key = (verdict, reason, stage)
    try:
        return _SERIES[key]
    except KeyError:
        if len(_SERIES) >= 1024:  # reason codes are the code's own, but bound it all the same
            _SERIES.clear()
        series = _SERIES[key] = series_of({"verdict": verdict, "reason": reason, "stage": stage})
        return series


def _tally(shared: Shared, entry: Audited) -> None:
    """Count the decision for the cluster's view (flushed to the store off the request path)."""
    refusal = None
    if entry.verdict in REFUSALS:
        refusal = refusal_of(entry.verdict, entry.reason, entry.agent, entry.method, entry.host, entry.path,
                             entry.operations, entry.repo)
    shared.tally.record(_series(entry.verdict, entry.reason, entry.stage), refusal)


def _refuse_unaudited(flow: http.HTTPFlow | tcp.TCPFlow | udp.UDPFlow) -> None:
    """Fail closed: what cannot be audited is not forwarded (a refusal stands as it is)."""
    if isinstance(flow, http.HTTPFlow):
        if flow.response is None:
            flow.response = plain_refusal(503, "gitvow refused the request: its audit line cannot be written; "
                                          f"the operator is told. reason={AUDIT_UNAVAILABLE}", AUDIT_UNAVAILABLE,
                                          **{"Retry-After": "5"})
    else:
        flow.kill()  # type: ignore[no-untyped-call]


class DecisionAudit:
    """Writes each flow's pending :class:`Audited` decision to the audit log and the metrics."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    def _write(self, flow: http.HTTPFlow | tcp.TCPFlow | udp.UDPFlow) -> None:
        entry: Audited | None = flow.metadata.get(AUDIT_KEY)
        if entry is None or entry.written:
            return
        entry.written = True
        shared = self.shared
        runtime = entry.runtime or shared.runtime
        if runtime is not None:
            try:
                clean_audited(entry, redactor_of(runtime))
            except Exception as exc:  # nothing the agent sent is written unless it was read clean
                log.error("gitvow: cannot clean an audit line: %s: %s", type(exc).__name__, exc)
                entry.path, entry.repo = "/[redacted by gitvow]", None
        shared.metrics.decided(entry.verdict, entry.reason, entry.adapter, entry.agent, entry.took)
        _tally(shared, entry)
        audit = shared.audit
        if audit is None:
            return
        try:
            audit.write(agent=entry.agent, host=entry.host, method=entry.method, path=entry.path,
                        operations=entry.operations, repo=entry.repo, verdict=entry.verdict, reason=entry.reason,
                        stage=entry.stage, latency=entry.took, note=entry.note)
        except AuditUnavailable as exc:
            log.error("gitvow: %s; refusing what it would record", exc)
            _refuse_unaudited(flow)

    def done(self) -> None:
        self.shared.tally.stop()  # what was counted since the last flush

    def http_connect(self, flow: http.HTTPFlow) -> None:
        self._write(flow)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        self._write(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        self._write(flow)

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        self._write(flow)

    def udp_start(self, flow: udp.UDPFlow) -> None:
        self._write(flow)

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        self._write(flow)

    def response(self, flow: http.HTTPFlow) -> None:
        sent = flow.metadata.get(SENT_KEY)
        if sent is not None and flow.response is not None:
            self.shared.metrics.upstream(sent[0], (flow.response.timestamp_end or time.time()) - sent[1])


__all__ = ["DecisionAudit"]
