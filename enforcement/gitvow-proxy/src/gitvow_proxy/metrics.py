"""The proxy's Prometheus metrics, served as text at ``/metrics`` on the admin listener.

Each replica counts what it decided itself (sum them across replicas); what lives in the
state store (budget used per agent, pending approvals) is read from the store at scrape time,
so every replica of a shared store reports the same value (take the max, not the sum).

- ``gitvow_decisions_total{verdict,reason,adapter,agent}``: one per audited decision
- ``gitvow_decision_seconds``: time spent deciding (the pipeline, store calls included)
- ``gitvow_upstream_seconds{adapter}``: from forwarding a request to its whole response
- ``gitvow_budget_used{agent}``: writes inside each budgeted agent's current window
- ``gitvow_store_errors_total``: store calls that failed (a shared store's server unreachable)
- ``gitvow_store_up``: 1 while the last store call succeeded
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gitvow_proxy.settings import ProxyPolicy

if TYPE_CHECKING:
    from gitvow_proxy.runtime import Runtime
    from gitvow_proxy.store import Store

#: A decision takes tens of microseconds; a store round trip or a big body scan, milliseconds.
DECISION_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0)
UPSTREAM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _StateCollector(Collector):
    """What the state store knows, read when scraped."""

    def __init__(self, state: Callable[[], tuple[Runtime | None, Store | None]]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        runtime, store = self._state()
        errors = CounterMetricFamily("gitvow_store_errors", "State store calls that failed.")
        errors.add_metric([], store.errors if store is not None else 0)
        yield errors
        if store is None:
            return
        up = GaugeMetricFamily("gitvow_store_up", "1 while the state store answers, 0 while it cannot be reached.")
        used = GaugeMetricFamily("gitvow_budget_used", "Writes inside the agent's current budget window.",
                                 labels=["agent"])
        try:
            if runtime is not None:
                budget = runtime.policy.section(ProxyPolicy).budget
                now = time.time()
                for agent in sorted(runtime.policy.model.agents):
                    if budget.limits_for(agent)[0] is not None:
                        used.add_metric([agent], store.usage(f"budget:{agent}:writes", now, float(budget.window_seconds)))
            pending = getattr(store, "pending_approvals", None)  # stores that hold approvals
            if callable(pending):
                yield GaugeMetricFamily("gitvow_approvals_pending", "Approvals waiting for a human.", value=pending())
            up.add_metric([], 1)
        except Exception:
            up.add_metric([], 0)
        yield up
        yield used


class Metrics:
    """One registry per addon (not the process-wide default), so tests and reloads stay apart."""

    def __init__(self, state: Callable[[], tuple[Runtime | None, Store | None]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._decisions = Counter("gitvow_decisions", "Decisions, by verdict, reason code, adapter and agent.",
                                  ["verdict", "reason", "adapter", "agent"], registry=self.registry)
        self._decision_seconds = Histogram("gitvow_decision_seconds", "Time spent deciding a request.",
                                           buckets=DECISION_BUCKETS, registry=self.registry)
        self._upstream = Histogram("gitvow_upstream_seconds", "From forwarding a request to its whole response.",
                                   ["adapter"], buckets=UPSTREAM_BUCKETS, registry=self.registry)
        self.registry.register(_StateCollector(state))
        # Label children looked up once: labels() takes a lock and builds a tuple each call.
        self._children: dict[tuple[str, str, str, str], Counter] = {}
        self._upstream_children: dict[str, Histogram] = {}

    def decided(self, verdict: str, reason: str | None, adapter: str | None, agent: str | None, seconds: float) -> None:
        key = (verdict, reason or "", adapter or "", agent or "")
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._decisions.labels(*key)
        child.inc()
        if seconds:
            self._decision_seconds.observe(seconds)

    def upstream(self, adapter: str, seconds: float) -> None:
        child = self._upstream_children.get(adapter)
        if child is None:
            child = self._upstream_children[adapter] = self._upstream.labels(adapter)
        child.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
