"""The MCP addons: what the proxy does for ``[mcp.NAME]`` endpoints beyond judging each call.

Each holds one concern and sits at its place among the proxy's addons
(:func:`gitvow_proxy.addons.proxy_addons`):

- :class:`McpSessions`, before enforcement: a request in an MCP session is refused
  (``mcp_session``) unless the session was opened through this proxy by the same agent; the
  session a server opens is bound to the agent that asked; an approved call is sent in a
  session the proxy opens for it (:mod:`.handshake`);
- :class:`McpStaging`, between enforcement and the approval relay: a ``tools/call`` about to
  be staged gets request ids derived from the call itself, so the agent's retry (a new id)
  finds the same approval, and the approved send is that call exactly once;
- :class:`McpAnswers`, after the approval relay: refusals answered as the client shows them
  to the model (a refused ``tools/call`` is a tool result with ``isError``, at 200: MCP
  clients drop any other body of a failed POST), a recorded answer re-addressed to the
  retry's ids, event streams passed on one scrubbed event at a time, and ``tools/list``
  answers filtered where the endpoint asks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable

from mitmproxy import http

from gitvow import denial, jsonrpc
from gitvow.adapters.mcp import SESSION_HEADER, McpAdapter, credential_name, refusal
from gitvow.request import Request
from gitvow_proxy.flow_metadata import (
    APPROVAL_KEY,
    AUDIT_KEY,
    IDENTITY_KEY,
    REFUSED_KEY,
    SECRETS_KEY,
    STAGED_KEY,
    Audited,
)
from gitvow_proxy.mcp.handshake import DEFAULT_VERSION, open_session
from gitvow_proxy.mcp.sessions import MCP_SESSION, SessionBindings, session_of, sessions_of
from gitvow_proxy.mcp.stream import EventStream
from gitvow_proxy.mcp.tools import filtered, list_ids, usable
from gitvow_proxy.resolver import tls_context
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")

#: ``McpAdapter``: the endpoint a flow goes to (set by :class:`McpSessions` for the others).
ENDPOINT_KEY = "gitvow.mcp.endpoint"
#: The request ids of a staged call as the agent sent them (:class:`McpStaging`).
IDS_KEY = "gitvow.mcp.ids"
#: ``(ids, agent)``: the ``tools/list`` requests of a flow whose answer is filtered.
LISTS_KEY = "gitvow.mcp.lists"
_EVENT_STREAM = "text/event-stream"


def endpoint_of(shared: Shared, flow: http.HTTPFlow) -> McpAdapter | None:
    """The MCP endpoint ``flow`` goes to under the policy in force, or None."""
    found = flow.metadata.get(ENDPOINT_KEY)
    if found is not None:
        return found if isinstance(found, McpAdapter) else None
    runtime = shared.runtime
    if runtime is None:
        return None
    hosts = runtime.engine.hosts
    req = flow.request
    host, port = req.host.lower(), req.port
    endpoint = None
    if hosts.has_mcp_at(host, port):  # elsewhere no adapter is an endpoint: nothing to build or route
        path = req.path.partition("?")[0]
        adapter = hosts.route(Request(req.method, host, path, port=port, scheme=req.scheme))
        endpoint = adapter if isinstance(adapter, McpAdapter) else None
    flow.metadata[ENDPOINT_KEY] = endpoint if endpoint is not None else False
    return endpoint


def agent_of(flow: http.HTTPFlow) -> str | None:
    """Who sent the request: the proven caller, or the agent of an approved request replayed."""
    replayed = flow.metadata.get(APPROVAL_KEY)
    if replayed is not None:
        return str(replayed[1])
    proven = flow.metadata.get(IDENTITY_KEY)
    return proven[0].name if proven is not None else None


def _session(flow: http.HTTPFlow) -> str:
    return session_of(flow.request.headers.get(SESSION_HEADER, ""), flow.request.path.partition("?")[2])


def _sessions(flow: http.HTTPFlow) -> list[str]:
    headers = flow.request.headers.get_all(SESSION_HEADER)
    return sessions_of(list(headers), flow.request.path.partition("?")[2])


class McpSessions:
    """Each MCP session is the agent's that opened it: ids are bound when a server gives them."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.bindings = SessionBindings()

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """Synchronous for every flow; only an approved MCP call is awaited (mitmproxy awaits
        what a hook returns), so the other requests pay no coroutine."""
        if flow.response is not None:
            return None
        endpoint = endpoint_of(self.shared, flow)
        agent = agent_of(flow)
        if endpoint is None or agent is None:
            return None
        if APPROVAL_KEY in flow.metadata:
            return self._approved(flow, endpoint, agent)
        self._check(flow, endpoint, agent)
        return None

    def _check(self, flow: http.HTTPFlow, endpoint: McpAdapter, agent: str) -> None:
        why = next((reason for session in _sessions(flow)
                    if (reason := self.bindings.refusal(endpoint.name, session, agent)) is not None), None)
        if why is None:
            return
        req = flow.request
        message = f"gitvow refused {req.method} {req.path.partition('?')[0]}: {why}. reason={MCP_SESSION}"
        flow.response = http.Response.make(403, refusal(req.raw_content or b"", message, MCP_SESSION, tool_results=False), {
            "Content-Type": "application/json", denial.REASON_HEADER: MCP_SESSION})
        flow.metadata[AUDIT_KEY] = Audited(req.method, f"{req.host}:{req.port}", req.path.partition("?")[0], agent,
                                           "deny", MCP_SESSION, "mcp_session", 0.0, adapter=endpoint.name)

    async def _approved(self, flow: http.HTTPFlow, endpoint: McpAdapter, agent: str) -> None:
        """An approved call is sent in a session of the proxy's own (:mod:`.handshake`)."""
        runtime = self.shared.runtime
        if runtime is None:
            return
        req = flow.request
        token = runtime.gates.credentials.get(credential_name(endpoint))
        extra = runtime.policy.section(ProxyPolicy).proxy.upstream_ca or None
        version = req.headers.get("mcp-protocol-version", "") or DEFAULT_VERSION
        try:
            session, negotiated = await asyncio.to_thread(open_session, endpoint, req.path, version, token,
                                                          tls_context(extra))
        except (OSError, ValueError) as exc:
            why = f"the MCP server did not open a session for the approved call ({type(exc).__name__}: {exc})"
            flow.metadata[REFUSED_KEY] = why
            flow.response = http.Response.make(502, why + "\n", {"Content-Type": "text/plain; charset=utf-8"})
            return
        req.headers["mcp-protocol-version"] = negotiated
        req.headers.pop(SESSION_HEADER, None)
        if session:
            req.headers[SESSION_HEADER] = session
            self.bindings.bind(endpoint.name, session, agent)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        endpoint = flow.metadata.get(ENDPOINT_KEY)
        response, agent = flow.response, agent_of(flow)
        if not isinstance(endpoint, McpAdapter) or response is None or agent is None:
            return
        if flow.request.method == "DELETE" and response.status_code < 300:
            self.bindings.forget(endpoint.name, _session(flow))
            return
        opened = response.headers.get(SESSION_HEADER, "").strip()
        if opened and not self.bindings.bind(endpoint.name, opened, agent):
            log.error("gitvow: %s gave agent %r a session another agent holds; cut", endpoint.name, agent)
            flow.kill()  # type: ignore[no-untyped-call]


def _pinned(body: bytes) -> bytes | None:
    """``body`` with each request id replaced by one derived from the call itself."""
    digest = hashlib.sha256(jsonrpc.canonical(body)).hexdigest()[:16]
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    items = data if isinstance(data, list) else [data]
    pinned = [{**item, "id": f"gitvow-{digest}-{n}"} if isinstance(item, dict) and "method" in item and "id" in item
              else item for n, item in enumerate(items)]
    return jsonrpc.dumps(pinned if isinstance(data, list) else pinned[0])


class McpStaging:
    """A call about to be staged is staged under ids derived from the call, not the client's."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    def request(self, flow: http.HTTPFlow) -> None:
        if STAGED_KEY not in flow.metadata or endpoint_of(self.shared, flow) is None:
            return
        body = flow.request.raw_content or b""
        pinned = _pinned(body)
        if pinned is not None:
            flow.metadata[IDS_KEY] = jsonrpc.request_ids(body)
            flow.request.content = pinned  # the refusal already answered is the agent's ids'


class McpAnswers:
    """What the MCP client receives: readable refusals, re-addressed answers, streams, lists."""

    def __init__(self, shared: Shared, bindings: SessionBindings) -> None:
        self.shared = shared
        self.bindings = bindings

    def request(self, flow: http.HTTPFlow) -> None:
        endpoint = endpoint_of(self.shared, flow)
        if endpoint is None:
            return
        response = flow.response
        if response is None:
            self._forwarded(flow, endpoint)
            return
        ids = flow.metadata.pop(IDS_KEY, None)
        if ids is not None and denial.APPROVAL_HEADER in response.headers and response.status_code < 300:
            # the approved call's recorded answer, for the agent's retry: under its own ids
            response.content = jsonrpc.readdressed(response.content or b"", response.headers.get("content-type", ""),
                                                   ids)
        elif denial.REASON_HEADER in response.headers and response.status_code == 403 and _tool_results(response):
            # a tool result with isError: MCP clients read it only on a success
            response.status_code, response.reason = 200, "OK"

    def _forwarded(self, flow: http.HTTPFlow, endpoint: McpAdapter) -> None:
        # an event stream is scrubbed one event at a time: it must arrive uncompressed
        flow.request.headers["accept-encoding"] = "identity"
        runtime = self.shared.runtime
        agent = agent_of(flow)
        if not endpoint.endpoint.filter_tools or runtime is None or agent is None or flow.request.method != "POST":
            return
        ids = list_ids(flow.request.raw_content or b"")
        if ids:
            flow.metadata[LISTS_KEY] = (ids, agent)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or not isinstance(flow.metadata.get(ENDPOINT_KEY), McpAdapter):
            return
        if not response.headers.get("content-type", "").lower().startswith(_EVENT_STREAM):
            return
        if APPROVAL_KEY in flow.metadata or LISTS_KEY in flow.metadata:
            return  # recorded for the approval, or filtered: read whole
        response.stream = EventStream(flow.metadata.get(SECRETS_KEY, ()), self._binder(flow)).chunks

    def _binder(self, flow: http.HTTPFlow) -> Callable[[str], None] | None:
        """A callback binding the sessions an older transport's event stream announces."""
        endpoint, agent = flow.metadata.get(ENDPOINT_KEY), agent_of(flow)
        if not isinstance(endpoint, McpAdapter) or agent is None:
            return None
        bindings = self.bindings

        def bind(session: str) -> None:
            if not bindings.bind(endpoint.name, session, agent):
                log.error("gitvow: %s announced a session another agent holds", endpoint.name)

        return bind

    def response(self, flow: http.HTTPFlow) -> None:
        lists = flow.metadata.pop(LISTS_KEY, None)
        endpoint, runtime, response = flow.metadata.get(ENDPOINT_KEY), self.shared.runtime, flow.response
        if lists is None or not isinstance(endpoint, McpAdapter) or runtime is None or response is None:
            return
        ids, agent = lists
        grant = runtime.grant_for(agent)
        if grant is None:
            return
        started = time.perf_counter()
        try:
            body = response.content or b""
        except ValueError:
            return  # undecodable: ScrubAndRecord refuses it
        kept = filtered(body, response.headers.get("content-type", ""), ids, endpoint, usable(runtime.engine, grant))
        if kept is not None:
            response.content = kept
            log.debug("gitvow: filtered a tools/list answer of %s in %.1f ms", endpoint.name,
                      (time.perf_counter() - started) * 1000)


def _tool_results(response: http.Response) -> bool:
    """Whether a refusal's body answers with tool results (a refused ``tools/call``)."""
    try:
        data = json.loads(response.content or b"")
    except (ValueError, RecursionError):
        return False
    items = data if isinstance(data, list) else [data]
    return any(isinstance(item, dict) and isinstance(item.get("result"), dict) for item in items)


__all__ = ["McpAnswers", "McpSessions", "McpStaging", "agent_of", "endpoint_of"]
