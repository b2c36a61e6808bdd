"""The response streaming addon: a model's answer streamed as it is written, never held back whole.

mitmproxy reads a response whole before handing it on (so :class:`ScrubAndRecord` can scrub
it); an agent then sees a model's streamed answer (server-sent events) only once the model
has finished, minutes later for a long one, and its client may time out. For flows whose
deciding adapter says it streams events (``Adapter.streams_events``: the model APIs), a forwarded
``text/event-stream`` answer is passed on one complete event at a time, each with the
injected credentials replaced as a whole body's would be (the MCP answers' own
:class:`~gitvow_proxy.mcp.stream.EventStream`), and its header fields scrubbed before they
are sent. Such requests ask for an uncompressed answer (``Accept-Encoding: identity``): an
event cannot be checked inside a compressed stream, and a compressed one is read whole.
An answer the approval relay records is read whole too, and an MCP endpoint's answers are
its own addon's (:class:`~gitvow_proxy.mcp.addons.McpAnswers`).
"""

from __future__ import annotations

from mitmproxy import http

from gitvow_proxy.flow_metadata import APPROVAL_KEY, SECRETS_KEY, SENT_KEY
from gitvow_proxy.mcp.stream import REDACTED, EventStream
from gitvow_proxy.shared import Shared

EVENT_STREAM = "text/event-stream"


class ResponseStreaming:
    """Streams the event-stream answers of adapters that stream events, scrubbed event by event."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    def _streams(self, flow: http.HTTPFlow) -> bool:
        runtime = self.shared.runtime
        if runtime is None or SENT_KEY not in flow.metadata or APPROVAL_KEY in flow.metadata:
            return False
        adapter = runtime.engine.adapters.get(flow.metadata[SENT_KEY][0])  # the one that decided (MCP's own)
        return adapter is not None and adapter.streams_events

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is None and self._streams(flow):
            flow.request.headers["accept-encoding"] = "identity"

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or response.stream or not self._streams(flow):
            return
        if not response.headers.get("content-type", "").lower().startswith(EVENT_STREAM):
            return
        if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
            return  # compressed despite the request: read whole, scrubbed whole
        secrets = [s for s in flow.metadata.get(SECRETS_KEY, ()) if s]
        response.headers.fields = tuple(
            (name, REDACTED if any(s in value for s in secrets) else value) for name, value in response.headers.fields)
        response.stream = EventStream(secrets).chunks


__all__ = ["EVENT_STREAM", "ResponseStreaming"]
