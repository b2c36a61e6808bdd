"""The graceful stop addon: on SIGTERM a replica stops taking requests and finishes its own.

A load balancer stops a replica with SIGTERM. Stopping at once would cut requests already
forwarded: the forge acts on a write whose client never hears the answer, and the agent's
retry does it twice. So :func:`drain` (run by ``gitvow proxy``'s SIGTERM handler) closes the
listening socket, answers any new request on a kept-alive connection with ``503
shutting_down`` (``Connection: close``, ``Retry-After``: another replica takes the retry), and
waits until every request in flight has its answer (and the forge's answer to an approval
it sent is recorded), or ``[proxy] shutdown_grace`` seconds have passed, before mitmproxy stops. A second SIGTERM, or SIGINT, stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import time

from mitmproxy import ctx, http

from gitvow_proxy.refusals import plain_refusal
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")

SHUTTING_DOWN = "shutting_down"


class GracefulStop:
    """Counts the requests in flight; refuses new ones once the proxy is draining."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.in_flight: set[str] = set()
        self.draining = False

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if self.draining:
            flow.response = plain_refusal(503, "gitvow refused the request: this proxy is shutting down; send it "
                                          f"again. reason={SHUTTING_DOWN}", SHUTTING_DOWN,
                                          **{"Retry-After": "1", "Connection": "close"})
            return
        self.in_flight.add(flow.id)

    def response(self, flow: http.HTTPFlow) -> None:
        self.in_flight.discard(flow.id)

    def error(self, flow: http.HTTPFlow) -> None:
        self.in_flight.discard(flow.id)

    async def drain(self, grace: float) -> int:
        """Stop listening and wait for the requests in flight (at most ``grace`` s); how many were cut."""
        self.draining = True
        ctx.options.update(server=False)  # type: ignore[no-untyped-call]  # closes the listening socket
        waiting = len(self.in_flight)
        if waiting:
            log.info("gitvow: stopping: %d request(s) in flight get their answers first (up to %gs)", waiting, grace)
        deadline = time.monotonic() + grace
        while (self.in_flight or self.shared.finishing) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.in_flight:
            log.warning("gitvow: stopping with %d request(s) still in flight after %gs", len(self.in_flight), grace)
        return len(self.in_flight)


__all__ = ["SHUTTING_DOWN", "GracefulStop"]
