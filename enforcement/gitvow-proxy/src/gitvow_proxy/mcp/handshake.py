"""A session of the proxy's own for an approved MCP call.

A human may approve a ``tools/call`` long after the agent's session ended; a stateful server
would refuse the call in a session it closed. So the proxy sends an approved call in a fresh
session it opens itself (``initialize``, then ``notifications/initialized``), with the
endpoint's credential, as the agent's client would have. A server that opens no session
(stateless) answers without an id, and the call is sent without one.
"""

from __future__ import annotations

import http.client
import json
import ssl

from gitvow import jsonrpc
from gitvow.adapters.mcp import SESSION_HEADER, McpAdapter
from gitvow.request import Request

#: The protocol version asked for when the staged request did not say one.
DEFAULT_VERSION = "2025-06-18"
ANSWER_LIMIT = 1 << 20
TIMEOUT = 10.0


class HandshakeFailed(OSError):
    """The server did not open a session: the approved call is not sent."""


def _post(endpoint: McpAdapter, path: str, headers: dict[str, str], body: bytes,
          context: ssl.SSLContext | None) -> tuple[int, str, str, bytes]:
    where = endpoint.endpoint
    connection: http.client.HTTPConnection
    if where.scheme == "https":
        connection = http.client.HTTPSConnection(where.host, where.port, timeout=TIMEOUT, context=context)
    else:
        connection = http.client.HTTPConnection(where.host, where.port, timeout=TIMEOUT)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read(ANSWER_LIMIT)
        return response.status, response.getheader(SESSION_HEADER, "") or "", response.getheader(
            "content-type", "") or "", answer
    finally:
        connection.close()


def _negotiated(content_type: str, answer: bytes) -> str | None:
    found: list[str] = []

    def read(value: object) -> object:
        if isinstance(value, dict) and isinstance(value.get("result"), dict):
            version = value["result"].get("protocolVersion")
            if isinstance(version, str):
                found.append(version)
        return value

    jsonrpc.rewritten(answer, content_type, read)
    return found[0] if found else None


def open_session(endpoint: McpAdapter, path: str, version: str, token: str | None,
                 context: ssl.SSLContext | None) -> tuple[str, str]:
    """``(session id or "", protocol version)`` of a session opened at ``path`` for an approved call."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "User-Agent": "gitvow-proxy", "MCP-Protocol-Version": version}
    probe = Request("POST", endpoint.endpoint.host, path, port=endpoint.endpoint.port, scheme=endpoint.endpoint.scheme)
    if token:
        headers.update(endpoint.credential_headers(probe, token))
    initialize = {"jsonrpc": "2.0", "id": "gitvow-initialize", "method": "initialize",
                  "params": {"protocolVersion": version, "capabilities": {},
                             "clientInfo": {"name": "gitvow-proxy", "version": "1"}}}
    status, session, content_type, answer = _post(endpoint, path, headers, json.dumps(initialize).encode(), context)
    if status >= 300:
        raise HandshakeFailed(f"{endpoint.name} answered initialize with HTTP {status}")
    negotiated = _negotiated(content_type, answer) or version
    headers["MCP-Protocol-Version"] = negotiated
    if session:
        headers[SESSION_HEADER] = session
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _, _ = _post(endpoint, path, headers, json.dumps(done).encode(), context)
    if status >= 300:
        raise HandshakeFailed(f"{endpoint.name} answered notifications/initialized with HTTP {status}")
    return session, negotiated
