"""Server-Sent Events passed on as they arrive, each event checked whole.

An MCP server answers with an event stream (a POST's response, or the long-lived GET
stream); buffering it until it ends would hold every message back, forever for the GET. So
the proxy forwards the stream one complete event at a time: an event is the unit the client
acts on, so that is all the buffering judging needs. Each event has the injected credentials
replaced (as a buffered response's body is), and an ``endpoint`` event of the older HTTP+SSE
transport reports its session to a callback, so the session can be bound to the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from gitvow_proxy.mcp.sessions import session_of

#: An event that grows past this is passed on scrubbed so far, the end kept back for a needle
#: that may straddle the cut: a server cannot make the proxy hold unbounded data.
MAX_EVENT = 1 << 20
REDACTED = b"[redacted by gitvow]"
_BOUNDARY = (b"\n\n", b"\r\n\r\n", b"\r\r")


def _split(buffer: bytes) -> int:
    """The end of the last complete event in ``buffer`` (0: none yet)."""
    return max((buffer.rfind(sep) + len(sep) for sep in _BOUNDARY if sep in buffer), default=0)


class EventStream:
    """A mitmproxy ``response.stream`` callable: chunks in, complete scrubbed events out."""

    def __init__(self, needles: Sequence[bytes], on_session: Callable[[str], None] | None = None) -> None:
        self._needles = [n for n in needles if n]
        self._keep = max((len(n) for n in self._needles), default=1) - 1
        self._on_session = on_session
        self._buffer = b""
        self.redacted = False

    def __call__(self, chunk: bytes) -> bytes:
        if not chunk:  # the end of the stream: what is left, as it is
            rest, self._buffer = self._buffer, b""
            return self._scrub(rest)
        self._buffer += chunk
        end = _split(self._buffer)
        if end == 0 and len(self._buffer) > MAX_EVENT:
            end = len(self._buffer) - self._keep
        if end <= 0:
            return b""
        ready, self._buffer = self._buffer[:end], self._buffer[end:]
        if self._on_session is not None:
            self._sessions(ready)
        return self._scrub(ready)

    def chunks(self, chunk: bytes) -> list[bytes]:
        """The callable for mitmproxy's ``response.stream``: nothing ready is no chunk at all.
        An empty chunk would be sent, and in a chunked HTTP/1 body it is the end: an event
        cut in two on the wire would end the agent's answer after its first half arrived."""
        out = self(chunk)
        return [out] if out else []

    def _scrub(self, data: bytes) -> bytes:
        for needle in self._needles:
            if needle in data:
                data = data.replace(needle, REDACTED)
                self.redacted = True
        return data

    def _sessions(self, events: bytes) -> None:
        if self._on_session is None:
            raise RuntimeError("internal error: self._on_session unset")
        text = events.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        for block in text.split("\n\n"):
            lines = block.split("\n")
            if "event: endpoint" in lines or "event:endpoint" in lines:
                for line in lines:
                    if line.startswith("data:"):
                        session = session_of("", urlsplit(line[5:].strip()).query)
                        if session:
                            self._on_session(session)
