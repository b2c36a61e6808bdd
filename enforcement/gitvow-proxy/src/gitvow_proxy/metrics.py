"""The proxy's Prometheus metrics, served as text at ``/metrics`` on the admin listener.

Each replica counts what it decided itself (sum them across replicas); what lives in the
state store (budget used per agent, pending approvals) is read from the store at scrape time,
so every replica of a shared store reports the same value (take the max, not the sum).

- ``gitvow_decisions_total{verdict,reason,adapter,agent}``: one per audited decision
- ``gitvow_decision_seconds``: time spent deciding (the pipeline, store calls included)
- ``gitvow_upstream_seconds{adapter}``: from forwarding a request to its whole response
- ``gitvow_budget_used{agent}``: writes inside each budgeted agent's current window
- ``gitvow_store_errors_total``: store calls that failed (a shared store's server unreachable)
- ``gitvow_store_up``: 1 while the store answers
- ``gitvow_approvals_pending``: approvals waiting for a human
- ``gitvow_approvals_stuck``: approvals in ``sending`` past ``[approvals] stuck_after``
- ``gitvow_cluster_decisions_total{verdict,reason}``: with a shared store, every replica's
  decisions as the store counts them (the same on each replica: take the max)
- ``gitvow_writes_total{agent,operation,outcome}``: writes (each action once) by their final
  outcome: ``allowed``, ``refused`` or ``throttled``
- ``gitvow_audit_errors_total``: audit lines that could not be written (each refused its request)
- ``gitvow_otlp_records_total{outcome}``: decisions handed to the OTLP exporter, by what became
  of them (``exported``, ``dropped``: the queue was full or the collector did not take them)

Per request the proxy only adds to plain counters (a dict increment, a bisect); the text
format is built by prometheus-client when scraped, so a proxy without ``[admin]`` never
imports it.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.stuck import stuck

if TYPE_CHECKING:
    from gitvow_proxy.audit import AuditLog
    from gitvow_proxy.runtime import Runtime
    from gitvow_proxy.store import Store

#: A decision takes tens of microseconds; a store round trip or a big body scan, milliseconds.
DECISION_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0)
UPSTREAM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

State = Callable[[], "tuple[Runtime | None, Store | None]"]
#: The audit log in force (its write errors, its OTLP exporter's counts).
CurrentAudit = Callable[[], "AuditLog | None"]


def _no_audit() -> AuditLog | None:
    return None


class Timings:
    """A histogram as plain numbers: a count per bucket (not cumulative) and the sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, ``+Inf`` last, as the text format wants them."""
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*map(repr, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


#: Seconds a scrape waits for the store's values before it reports the store down.
STORE_READ_TIMEOUT = 0.25


def _store_values(runtime: Runtime | None, store: Store) -> tuple[list[tuple[str, int]], int, int, dict[str, int]]:
    budgets: list[tuple[str, int]] = []
    stuck_after = runtime.policy.section(ProxyPolicy).approvals.stuck_after if runtime is not None else 180.0
    if runtime is not None:
        budget = runtime.policy.section(ProxyPolicy).budget
        now = time.time()
        for agent in sorted(runtime.policy.model.agents):
            if budget.limits_for(agent)[0] is not None:
                budgets.append((agent, store.usage(f"budget:{agent}:writes", now, float(budget.window_seconds))))
    tally = store.tally()
    return budgets, store.pending_approvals(), len(stuck(store, time.time(), stuck_after)), tally[0] if tally else {}


def _cluster_family(counter: Any, cluster: dict[str, int]) -> Any:
    """Every replica's decisions, as the shared store counts them (:mod:`gitvow_proxy.cluster_view`)."""
    family = counter("gitvow_cluster_decisions", "Decisions of every replica sharing the state store, by "
                     "verdict and reason (flushed about once a second).", labels=["verdict", "reason"])
    for series, value in sorted(cluster.items()):
        verdict, _, reason = series.partition(": ")
        family.add_metric([verdict, reason], value)
    return family


class Metrics:
    """What one proxy process counted; rendered on demand."""

    def __init__(self, state: State, audit: CurrentAudit = _no_audit) -> None:
        self._state = state
        self._audit = audit
        self._reader = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gitvow-metrics")
        self.decisions: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
        self.decision_seconds = Timings(DECISION_BUCKETS)
        self.upstream_seconds: dict[str, Timings] = {}

    def decided(self, verdict: str, reason: str | None, adapter: str | None, agent: str | None, seconds: float) -> None:
        self.decisions[(verdict, reason or "", adapter or "", agent or "")] += 1
        if seconds:
            self.decision_seconds.observe(seconds)

    def upstream(self, adapter: str, seconds: float) -> None:
        timings = self.upstream_seconds.get(adapter)
        if timings is None:
            timings = self.upstream_seconds[adapter] = Timings(UPSTREAM_BUCKETS)
        timings.observe(seconds)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        decisions = CounterMetricFamily("gitvow_decisions", "Decisions, by verdict, reason code, adapter and agent.",
                                        labels=["verdict", "reason", "adapter", "agent"])
        for labels, value in list(self.decisions.items()):
            decisions.add_metric(list(labels), value)
        yield decisions
        timed = HistogramMetricFamily("gitvow_decision_seconds", "Time spent deciding a request.")
        timed.add_metric([], self.decision_seconds.buckets(), self.decision_seconds.total)
        yield timed
        upstream = HistogramMetricFamily("gitvow_upstream_seconds", "From forwarding a request to its whole response.",
                                         labels=["adapter"])
        for adapter, timings in list(self.upstream_seconds.items()):
            upstream.add_metric([adapter], timings.buckets(), timings.total)
        yield upstream
        runtime, _ = self._state()
        if runtime is not None:
            writes = CounterMetricFamily("gitvow_writes", "Writes, each action once, by their final outcome.",
                                         labels=["agent", "operation", "outcome"])
            for (agent, operation, outcome), value in sorted(runtime.gates.counts.items()):
                writes.add_metric([agent, operation, outcome], value)
            yield writes
        audit = self._audit()
        errors = CounterMetricFamily("gitvow_audit_errors", "Audit lines that could not be written (each refused).")
        errors.add_metric([], audit.errors if audit is not None else 0)
        yield errors
        counts = audit.otlp.counts if audit is not None and audit.otlp is not None else None
        if counts is not None:
            records = CounterMetricFamily("gitvow_otlp_records", "Decisions handed to the OTLP exporter, by outcome.",
                                          labels=["outcome"])
            records.add_metric(["exported"], counts.exported)
            records.add_metric(["dropped"], counts.dropped)
            yield records
        yield from self._collect_state(CounterMetricFamily, GaugeMetricFamily)

    def _collect_state(self, counter: Any, gauge: Any) -> Iterator[Any]:
        runtime, store = self._state()
        errors = counter("gitvow_store_errors", "State store calls that failed.")
        errors.add_metric([], store.errors if store is not None else 0)
        yield errors
        if store is None:
            return
        up = gauge("gitvow_store_up", "1 while the state store answers, 0 while it cannot be reached.")
        used = gauge("gitvow_budget_used", "Writes inside the agent's current budget window.", labels=["agent"])
        # A scrape never waits on a hung store: what the store says is read in a thread of its
        # own, for at most STORE_READ_TIMEOUT; past that the store is reported down.
        future = self._reader.submit(_store_values, runtime, store)
        try:
            budgets, pending, stuck_now, cluster = future.result(timeout=STORE_READ_TIMEOUT)
        except Exception:
            up.add_metric([], 0)
        else:
            for agent, value in budgets:
                used.add_metric([agent], value)
            yield gauge("gitvow_approvals_pending", "Approvals waiting for a human.", value=pending)
            yield gauge("gitvow_approvals_stuck", "Approvals in sending past [approvals] stuck_after: their "
                        "sender stopped mid-send; an operator resolves each.", value=stuck_now)
            if cluster:
                yield _cluster_family(counter, cluster)
            up.add_metric([], 1)
        yield up
        yield used

    def render(self) -> bytes:
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)  # a Collector by shape: it has collect()
        return generate_latest(registry)
