"""Reading a mitmproxy flow file for replay without building mitmproxy ``Flow`` objects.

Replay needs, of each recorded flow, its request, its gitvow metadata and (for a plain
``mitmdump -w`` recording) the id of its client connection. mitmproxy's ``FlowReader``
parses every field of every flow (the response, both connections with their TLS details)
and then builds a ``Flow`` from that state; both steps cost as much as replay itself.

This module still reads everything through mitmproxy's own code — ``mitmproxy.io.tnetstring``
parses every value replay uses, ``mitmproxy.io.compat.migrate_flow`` upgrades older flow
formats, ``mitmproxy.http.Headers`` holds the headers — but skips what replay does not read.
A flow file is a sequence of tnetstrings, each ``LENGTH:PAYLOAD`` and a type byte, and a flow
is a dictionary whose payload is again such a sequence (key, value, key, value…), so
:func:`spans` finds where each record (and each field of a record) starts and ends from the
length prefixes alone, without parsing payloads. That lets a large file be cut into chunks
read by several processes (:mod:`.parallel`), and a record be read field by field.

A record in another flow-format version than this mitmproxy's is parsed whole and migrated
by ``compat.migrate_flow``, exactly as ``FlowReader`` does; anything this reader cannot make
sense of raises ``ValueError``, which the caller reports as the file's one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Top-level fields of a flow that replay reads, as the current flow format writes their keys
#: (tnetstring text); the others (the response, the connections' TLS details…) are skipped.
#: A key written another way (bytes, in older formats) is not recognised, so the record has
#: no current ``version`` and is parsed whole and migrated.
_WANTED = {f"{len(key)}:{key};".encode(): key for key in ("type", "version", "request", "metadata")}
_CLIENT = b"11:client_conn;"


def spans(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The (start, end) of each tnetstring laid end to end in ``data[start:end]``; ``ValueError``
    when the lengths do not add up (a truncated or foreign file)."""
    end = len(data) if end is None else end
    out: list[tuple[int, int]] = []
    append, find = out.append, data.find
    pos = start
    while pos < end:
        colon = find(b":", pos, end)
        prefix = data[pos:colon]
        # as mitmproxy's reader: ASCII digits only, at most 12 of them
        if colon < 0 or not prefix.isdigit() or colon - pos > 12:
            raise ValueError(f"not a tnetstring: missing or invalid length prefix at byte {pos}")
        stop = colon + int(prefix) + 2  # payload, then the type byte
        if stop > end:
            raise ValueError(f"not a tnetstring: a record at byte {pos} runs past the end")
        append((pos, stop))
        pos = stop
    return out


@dataclass(frozen=True, slots=True)
class FlowFields:
    """What replay reads of one recorded flow (the request's state as mitmproxy stores it)."""

    http: bool
    request: dict[str, Any] | None
    metadata: dict[str, Any]
    #: The client connection's state (an older format, parsed whole) or where it lies in the
    #: file, parsed only when asked for (:func:`client_id`; plain mitmdump recordings).
    client_conn: dict[str, Any] | tuple[int, int] | None


def client_id(data: bytes, flow: FlowFields) -> str | None:
    """The id of the flow's client connection (a CONNECT's user applies to its connection)."""
    from mitmproxy.io import tnetstring

    conn: Any = flow.client_conn
    if isinstance(conn, tuple):
        conn = tnetstring.loads(memoryview(data)[conn[0]:conn[1]])  # type: ignore[arg-type]
    if conn is None:
        return None
    ident = conn.get("id") if isinstance(conn, dict) else None
    if not isinstance(ident, str):
        raise ValueError("invalid flow: malformed client connection")
    return ident


def fields(data: bytes, start: int, end: int) -> FlowFields:
    """The fields of the flow record ``data[start:end]`` that replay reads, through mitmproxy's
    tnetstring parser and flow-format migration."""
    from mitmproxy import version
    from mitmproxy.io import compat, tnetstring

    view = memoryview(data)
    if data[end - 1] != ord("}"):
        raise ValueError(f"invalid flow at byte {start}: not a dictionary")
    payload = data.find(b":", start) + 1
    items = spans(data, payload, end - 1)
    if len(items) % 2:
        raise ValueError(f"invalid flow at byte {start}: a key without a value")
    state: dict[Any, Any] = {}
    conn: dict[str, Any] | tuple[int, int] | None = None
    for (k0, k1), (v0, v1) in zip(items[::2], items[1::2], strict=True):
        raw = data[k0:k1]
        key = _WANTED.get(raw)
        if key is not None:
            state[key] = tnetstring.loads(view[v0:v1])  # type: ignore[arg-type]
        elif raw == _CLIENT:
            conn = (v0, v1)
    if state.get("version") != version.FLOW_FORMAT_VERSION:
        # an older (or newer) format: parse it whole and let mitmproxy migrate it (or refuse it)
        whole = tnetstring.loads(view[start:end])  # type: ignore[arg-type]
        if not isinstance(whole, dict):
            raise ValueError(f"Invalid flow: {whole!r}")
        state = compat.migrate_flow(whole)
        conn = state.get("client_conn")
    kind = state.get("type")
    request = state.get("request")
    metadata = state.get("metadata") or {}
    if kind == "http" and not isinstance(request, dict):
        raise ValueError(f"invalid flow at byte {start}: no request")
    if not isinstance(metadata, dict):
        raise ValueError(f"invalid flow at byte {start}: malformed metadata")
    return FlowFields(kind == "http", request if kind == "http" else None, metadata, conn)
