"""gitvow's addons presented to mitmproxy as one addon, calling each in order and failing closed.

mitmproxy hands every hook of every request (request headers, request, response headers,
response, and an ``update`` after each) to each top-level addon it holds, each call a
coroutine inside a context manager, whether or not the addon implements the hook: ten
top-level addons of one concern each would cost more per request than the pipeline. The
chain is one addon; it looks each hook's implementations up once and calls them in order.

It also closes what mitmproxy leaves open: mitmproxy logs an exception from an addon and
carries on, so a request whose identity or enforcement addon raised would still be sent.
Here an exception while a request is decided refuses it (403 ``internal_error``), one while
its response is handled replaces the response (502), and one on a raw stream cuts it; the
addons after the one that raised still run (the audit addon records the refusal).
Lifecycle hooks (``load``, ``configure``, ``running``, ``done``) let exceptions through:
mitmproxy reports a bad option there.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from mitmproxy import http

from gitvow.pipeline import INTERNAL_ERROR
from gitvow_proxy.refusals import plain_refusal

log = logging.getLogger("gitvow_proxy")

#: Hooks on a request before it is sent: an exception refuses it.
_DECIDING = ("http_connect", "requestheaders", "request")
#: Hooks on what comes back: an exception replaces the response.
_ANSWERING = ("responseheaders", "response", "error")
#: Hooks on raw streams and connections: an exception cuts the stream.
_STREAMS = ("tcp_start", "udp_start", "websocket_start", "tls_clienthello", "client_disconnected")
_LIFECYCLE = ("load", "configure", "running", "done")


def _refuse(flow: Any, hook: str, exc: Exception) -> None:
    """Fail closed on ``flow`` after an addon raised in ``hook``."""
    if hook in _DECIDING and isinstance(flow, http.HTTPFlow):
        flow.response = plain_refusal(403, f"gitvow refused the request: internal error ({type(exc).__name__}). "
                                      f"reason={INTERNAL_ERROR}", INTERNAL_ERROR)
    elif hook in ("responseheaders", "response") and isinstance(flow, http.HTTPFlow):
        flow.response = plain_refusal(502, "gitvow could not check the upstream response", INTERNAL_ERROR)
    elif hook in _STREAMS and getattr(flow, "killable", False):
        flow.kill()


class AddonChain:
    """One mitmproxy addon that runs ``addons`` in order for every hook they implement."""

    def __init__(self, addons: Sequence[object]) -> None:
        self.chained = tuple(addons)
        self._hooks: dict[str, tuple[Callable[..., Any], ...]] = {
            name: tuple(getattr(a, name) for a in self.chained if callable(getattr(a, name, None)))
            for name in (*_DECIDING, *_ANSWERING, *_STREAMS, *_LIFECYCLE)
        }

    # -- lifecycle: exceptions go to mitmproxy, which reports them -------------------------

    def load(self, loader: Any) -> None:
        for hook in self._hooks["load"]:
            hook(loader)

    def configure(self, updated: set[str]) -> None:
        for hook in self._hooks["configure"]:
            hook(updated)

    def running(self) -> None:
        for hook in self._hooks["running"]:
            hook()

    def done(self) -> None:
        for hook in self._hooks["done"]:
            try:
                hook()
            except Exception as exc:  # every addon gets to release what it holds
                log.error("gitvow: %s failed to stop: %s: %s", hook, type(exc).__name__, exc)

    # -- flows --------------------------------------------------------------------------------

    async def _run(self, name: str, flow: Any) -> None:
        for hook in self._hooks[name]:
            try:
                result = hook(flow)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                log.error("gitvow: %s raised in %s: %s: %s", getattr(hook, "__self__", hook).__class__.__name__,
                          name, type(exc).__name__, exc)
                _refuse(flow, name, exc)

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        await self._run("http_connect", flow)

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        await self._run("requestheaders", flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        await self._run("request", flow)

    async def responseheaders(self, flow: http.HTTPFlow) -> None:
        await self._run("responseheaders", flow)

    async def response(self, flow: http.HTTPFlow) -> None:
        await self._run("response", flow)

    async def error(self, flow: http.HTTPFlow) -> None:
        await self._run("error", flow)

    async def tcp_start(self, flow: Any) -> None:
        await self._run("tcp_start", flow)

    async def udp_start(self, flow: Any) -> None:
        await self._run("udp_start", flow)

    async def websocket_start(self, flow: http.HTTPFlow) -> None:
        await self._run("websocket_start", flow)

    async def tls_clienthello(self, data: Any) -> None:
        await self._run("tls_clienthello", data)

    async def client_disconnected(self, client: Any) -> None:
        await self._run("client_disconnected", client)


__all__ = ["AddonChain"]
