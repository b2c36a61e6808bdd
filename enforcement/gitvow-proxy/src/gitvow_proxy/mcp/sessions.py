"""MCP sessions bound to the agent that opened them.

A Streamable HTTP server names a session in the ``Mcp-Session-Id`` header of its answer to
``initialize``; the older HTTP+SSE transport in the ``endpoint`` event of its stream (a
``session_id`` query parameter of the message URL). Whoever holds the id speaks in that
session, so the proxy remembers which agent each id was given to and refuses it to any
other, and refuses an id it never saw given (it may have been read from somewhere else).
Kept in this process's memory, bounded: after a restart, or on another replica, a client
starts a new session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from urllib.parse import parse_qs

#: Reason code of a refused session id.
MCP_SESSION = "mcp_session"
#: Query parameters the older HTTP+SSE transport names its session by.
QUERY_KEYS = ("session_id", "sessionId")


def session_of(headers_value: str, query: str) -> str:
    """The session a request speaks in: its ``Mcp-Session-Id``, else its message URL's query."""
    found = sessions_of([headers_value] if headers_value else [], query)
    return found[0] if found else ""


def sessions_of(header_values: list[str], query: str) -> list[str]:
    """Every session id a request names, in any header or query parameter a server may read:
    each must be the sender's, since the proxy cannot know which one the server picks."""
    found = [value.strip() for value in header_values if value.strip()]
    if query:
        values = parse_qs(query, keep_blank_values=True)
        found += [value for key in QUERY_KEYS for value in values.get(key, ())]
    return found


class SessionBindings:
    """session id → agent, the oldest forgotten first beyond ``limit``."""

    def __init__(self, limit: int = 100_000) -> None:
        self._agents: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def bind(self, endpoint: str, session: str, agent: str) -> bool:
        """Give ``session`` of ``endpoint`` to ``agent``; False if another agent holds it already."""
        key = (endpoint, session)
        with self._lock:
            holder = self._agents.get(key)
            if holder is not None and holder != agent:
                return False
            self._agents[key] = agent
            self._agents.move_to_end(key)
            while len(self._agents) > self._limit:
                self._agents.popitem(last=False)
            return True

    def holder(self, endpoint: str, session: str) -> str | None:
        with self._lock:
            return self._agents.get((endpoint, session))

    def forget(self, endpoint: str, session: str) -> None:
        with self._lock:
            self._agents.pop((endpoint, session), None)

    def refusal(self, endpoint: str, session: str, agent: str) -> str | None:
        """Why ``agent`` may not speak in ``session`` (None: it may)."""
        holder = self.holder(endpoint, session)
        if holder == agent:
            return None
        if holder is None:
            return "this MCP session was not opened through gitvow; start a new session"
        return "this MCP session belongs to another agent; start a session of your own"
