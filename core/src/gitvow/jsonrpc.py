"""JSON-RPC 2.0 as MCP carries it over HTTP: the messages of a POST body, and SSE events.

The MCP reader (:mod:`gitvow.adapters.mcp`) judges what these functions read, so they are
strict: a body that is not exactly JSON-RPC 2.0 (one message object or a non-empty batch
array of them, within the limits) is unreadable, and the reader calls it ``unknown``. The
rest serves the proxy: refusals written as the client expects them, a recorded answer
re-addressed to a retry's id, and Server-Sent Events framing for responses that stream.
Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

VERSION = "2.0"
#: The largest body read; a larger one is not judged (``unknown``).
MAX_BODY = 1 << 20
#: The most messages one batch may hold.
MAX_BATCH = 64

#: JSON-RPC error codes: the server's own range for a refusal, the spec's for bad input.
REFUSED = -32001
INVALID_REQUEST = -32600

type JsonId = str | int | None


class Unreadable(ValueError):
    """The body is not JSON-RPC 2.0 the reader can judge; the message says why, without quoting it."""


@dataclass(frozen=True, slots=True)
class Message:
    """One JSON-RPC message: a request (``method`` and ``id``), a notification (``method``,
    no ``id``), or a response the client sends back to the server (``id``, no ``method``)."""

    method: str | None
    params: Mapping[str, Any]
    id: JsonId
    has_id: bool

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.has_id


def read_body(body: bytes, *, limit: int = MAX_BODY) -> tuple[tuple[Message, ...], bool]:
    """``(messages, batch)``: the messages of a POST body and whether it was a batch array.

    Raises :class:`Unreadable` for anything else: over ``limit``, not UTF-8 JSON, an empty
    or oversized batch, or a member that is not a JSON-RPC 2.0 message.
    """
    if len(body) > limit:
        raise Unreadable(f"the body is larger than {limit} bytes")
    try:
        data = json.loads(body, object_pairs_hook=_unique)
    except _Duplicate as exc:
        raise Unreadable(f"a key given twice in one object ({str(exc)[:40]})") from None
    except (ValueError, RecursionError):
        raise Unreadable("the body is not JSON") from None
    if isinstance(data, list):
        if not data:
            raise Unreadable("an empty batch")
        if len(data) > MAX_BATCH:
            raise Unreadable(f"a batch of more than {MAX_BATCH} messages")
        return tuple(_message(item) for item in data), True
    return (_message(data),), False


class _Duplicate(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once: parsers differ on which of two wins (the
    first or the last), so a body that names a tool or an owner twice is not judged."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return result


def _message(item: object) -> Message:
    if not isinstance(item, dict) or item.get("jsonrpc") != VERSION:
        raise Unreadable("a message that is not JSON-RPC 2.0")
    has_id = "id" in item
    ident = item.get("id")
    if has_id and (isinstance(ident, bool) or not isinstance(ident, str | int | None)):
        raise Unreadable("a message id that is neither a string nor a number")
    method = item.get("method")
    params = item.get("params", {})
    if method is None:
        if not has_id or ("result" in item) == ("error" in item):
            raise Unreadable("a message with neither a method nor exactly one of result and error")
        return Message(None, {}, ident, True)
    if not isinstance(method, str):
        raise Unreadable("a method that is not a string")
    if not isinstance(params, dict):
        raise Unreadable(f"{method}: params that are not an object")
    return Message(method, params, ident, has_id)


def error(ident: JsonId, message: str, code: int = REFUSED, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data:
        err["data"] = dict(data)
    return {"jsonrpc": VERSION, "id": ident, "error": err}


def result(ident: JsonId, value: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result response."""
    return {"jsonrpc": VERSION, "id": ident, "result": dict(value)}


def dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def canonical(body: bytes) -> bytes:
    """The body with every request id blanked, or the body itself if it is unreadable.

    Two sends of the same call differ only in their ids (a client numbers its requests),
    so the proxy fingerprints a staged call by this form: the agent's retry finds the
    approval it staged before.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(item, dict) for item in items):
        return body
    blanked = [{**item, "id": None} if "id" in item else item for item in items]
    return json.dumps(blanked if isinstance(data, list) else blanked[0], sort_keys=True,
                      separators=(",", ":")).encode()


def request_ids(body: bytes) -> tuple[JsonId, ...]:
    """The ids of the requests in ``body``, in order; empty when it cannot be read."""
    try:
        messages, _ = read_body(body)
    except Unreadable:
        return ()
    return tuple(m.id for m in messages if m.is_request)


def rewritten(body: bytes, content_type: str, rewrite: Callable[[Any], Any]) -> bytes | None:
    """``body`` (JSON, or an SSE stream of JSON events) with each JSON value passed through
    ``rewrite``; None when the JSON body cannot be read (an event that cannot is kept as it is)."""
    if content_type.split(";")[0].strip().lower() == "text/event-stream":
        out = []
        for event in iter_events(body):
            data = event.get("data")
            if data is not None:
                try:  # noqa: SIM105 - contextlib costs the agent hook's forge path
                    event = {**event, "data": json.dumps(rewrite(json.loads(data)), separators=(",", ":"))}
                except (ValueError, RecursionError):
                    pass  # an event that cannot be read is kept as it is
            out.append(render_event(event))
        return b"".join(out)
    try:
        return dumps(rewrite(json.loads(body)))
    except (ValueError, RecursionError):
        return None


def readdressed(body: bytes, content_type: str, ids: Sequence[JsonId]) -> bytes:
    """A recorded answer (JSON or an SSE stream) with its response ids replaced, in order, by ``ids``.

    The proxy answers an approved call's retry with what the server answered the approved
    send, under the retry's own ids, so the client matches it to the request it just made.
    Responses beyond ``ids`` and server requests keep theirs.
    """
    queue = list(ids)

    def swap(value: Any) -> Any:
        if isinstance(value, list):
            return [swap(item) for item in value]
        if isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value) and queue:
            return {**value, "id": queue.pop(0)}
        return value

    found = rewritten(body, content_type, swap)
    return body if found is None else found


# -- Server-Sent Events ---------------------------------------------------------------------


def iter_events(stream: bytes) -> Iterator[dict[str, str]]:
    """The events of a complete SSE stream: each a mapping of its fields (``data`` lines joined)."""
    text = stream.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        event: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            event[name] = f"{event[name]}\n{value}" if name == "data" and name in event else value
        if event:
            yield event


def render_event(event: Mapping[str, str]) -> bytes:
    lines: list[str] = []
    for name, value in event.items():
        if name == "data":
            lines.extend(f"data: {part}" for part in value.split("\n"))
        else:
            lines.append(f"{name}: {value}")
    return ("\n".join(lines) + "\n\n").encode()
