"""The addon chain calls gitvow's addons in order and fails closed when one of them raises.

mitmproxy itself logs an addon's exception and carries on: without the chain, a request
whose identity addon raised would be sent on. Real mitmproxy flows, real chain."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from mitmproxy import http
from mitmproxy.flow import Error
from mitmproxy.test import tflow

from gitvow.denial import REASON_HEADER
from gitvow_proxy.addons import AddonChain, gitvow_addon


def fire(result: Any) -> None:
    """Run a hook as mitmproxy does: a plain function has run already, a coroutine is awaited."""
    if inspect.isawaitable(result):
        asyncio.run(result)  # type: ignore[arg-type]


class Raises:
    def __init__(self, hook: str) -> None:
        self.hook = hook

    def __getattr__(self, name: str) -> Any:
        if name != self.hook:
            raise AttributeError(name)

        def broken(*_args: object) -> None:
            raise RuntimeError("a bug")

        return broken


class Seen:
    """Records the hooks it saw, and whether a response was already set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | None]] = []

    async def request(self, flow: http.HTTPFlow) -> None:
        self.calls.append(("request", flow.response.status_code if flow.response else None))

    def response(self, flow: http.HTTPFlow) -> None:
        self.calls.append(("response", flow.response.status_code if flow.response else None))


def test_a_raising_addon_refuses_the_request_and_the_next_addons_still_run() -> None:
    seen = Seen()
    chain = AddonChain([Raises("request"), seen])
    flow = tflow.tflow()
    fire(chain.request(flow))
    assert flow.response is not None and flow.response.status_code == 403
    assert flow.response.headers[REASON_HEADER] == "internal_error"
    assert seen.calls == [("request", 403)]


def test_a_raising_addon_on_the_response_replaces_it() -> None:
    seen = Seen()
    flow = tflow.tflow(resp=True)
    fire(AddonChain([Raises("response"), seen]).response(flow))
    assert flow.response is not None and flow.response.status_code == 502
    assert seen.calls == [("response", 502)]


def test_a_raising_addon_on_a_raw_stream_cuts_it() -> None:
    flow = tflow.ttcpflow(err=False)
    flow.live = True
    assert flow.killable
    fire(AddonChain([Raises("tcp_start")]).tcp_start(flow))
    assert flow.error is not None and flow.error.msg == Error.KILLED_MESSAGE


def test_without_a_policy_every_request_is_refused() -> None:
    flow = tflow.tflow()
    chain = gitvow_addon()
    fire(chain.requestheaders(flow))
    fire(chain.request(flow))
    assert flow.response is not None and flow.response.status_code == 503


def test_the_chain_answers_every_hook_its_addons_implement_and_only_those() -> None:
    """A hook the chain did not pass on (server_connect, where egress pins the address) would be
    skipped silently: every hook of every addon is answered, and nothing else."""
    from gitvow_proxy.addons import proxy_addons

    addons = proxy_addons()
    chain = AddonChain(addons)
    assert "server_connect" in vars(chain) and "request" in vars(chain)
    for addon in addons:
        for name in ("server_connect", "tls_clienthello", "responseheaders", "client_disconnected", "load"):
            if callable(getattr(addon, name, None)):
                assert callable(getattr(chain, name, None)), f"{type(addon).__name__}.{name} is not passed on"
    assert "dns_request" not in vars(chain)  # no addon implements it


def test_a_raising_server_connect_keeps_the_connection_closed() -> None:
    from mitmproxy import connection
    from mitmproxy.proxy import server_hooks

    client = connection.Client(peername=("127.0.0.1", 1), sockname=("127.0.0.1", 2), timestamp_start=0)
    server = connection.Server(address=("example.test", 443))
    data = server_hooks.ServerConnectionHookData(server, client)
    fire(AddonChain([Raises("server_connect")]).server_connect(data))
    assert server.error is not None and "internal error" in server.error


def test_a_hook_no_addon_awaits_in_is_a_plain_function_and_still_fails_closed() -> None:
    """Hooks whose implementations are all plain functions cost mitmproxy no coroutine; one
    that hands back an awaitable there has nothing to await it and is refused as a failure."""
    chain = gitvow_addon()
    assert not inspect.iscoroutinefunction(chain.requestheaders)
    assert not inspect.iscoroutinefunction(chain.responseheaders)
    assert inspect.iscoroutinefunction(chain.request)

    class HandsBack:
        def response(self, flow: http.HTTPFlow) -> object:
            return asyncio.sleep(0)

    flow = tflow.tflow(resp=True)
    fire(AddonChain([HandsBack()]).response(flow))
    assert flow.response is not None and flow.response.status_code == 502
