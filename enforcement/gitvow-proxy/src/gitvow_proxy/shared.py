"""The one object the proxy's addons share: the policy in force, its store, the audit log.

The addons (:mod:`gitvow_proxy.addons`) each hold one concern and never import each other;
what one of them produces for the others lives here (what lasts as long as a policy) or on
the flow (what lasts as long as a request: :mod:`gitvow_proxy.flow_metadata`). The reload
addon swaps :attr:`Shared.runtime` whole, so every other addon reads one policy per request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gitvow_proxy.audit import AuditLog
from gitvow_proxy.cluster_view import ClusterTally
from gitvow_proxy.metrics import Metrics
from gitvow_proxy.runtime import Runtime
from gitvow_proxy.store import Store


def _nothing() -> None:
    return None


class Shared:
    """What every addon of one proxy reads: set by the reload and approvals addons."""

    def __init__(self) -> None:
        #: The policy in force, with its engine, identities and gates; None until one loads.
        self.runtime: Runtime | None = None
        #: The state store ``[proxy] state`` names (opened once, at start-up).
        self.store: Store | None = None
        #: The audit log ``[audit] path`` names (reopened when a reload changes the path).
        self.audit: AuditLog | None = None
        #: What this process counted, served at ``/metrics``.
        self.metrics = Metrics(lambda: (self.runtime, self.store), lambda: self.audit)
        #: This replica's decisions, flushed to the shared store about once a second.
        self.tally = ClusterTally(lambda: self.store)
        #: Wakes the approval sender now (the desk calls it from its thread after an approval).
        self.wake_sender: Callable[[], None] = _nothing
        #: Work a graceful stop waits for besides the requests in flight: recording the forge's
        #: answer to a replayed approval (the sender's tasks add and discard themselves).
        self.finishing: set[asyncio.Future[Any]] = set()


__all__ = ["Shared"]
