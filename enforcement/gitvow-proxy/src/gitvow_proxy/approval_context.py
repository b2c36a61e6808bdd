"""What the forge says about a staged request, asked for the human approving it: the proxy's driving.

The forge knowledge is the adapter's (:meth:`gitvow.adapter.Adapter.approval_subject`,
:meth:`~gitvow.adapter.Adapter.approval_context`, :meth:`~gitvow.adapter.Adapter.pin_head`;
the values are :mod:`gitvow.approval_context`). This module only drives it, the same way for
every forge:

- :func:`forge_get` is the :class:`~gitvow.approval_context.Ask` the adapter asks with: one
  host (the staged request's), the credential the proxy injects, within ``CONTEXT_SECONDS`` in
  all and ``ANSWER_LIMIT`` bytes per answer;
- :func:`gather` never raises: anything that fails is a context whose ``error`` says what,
  shown plainly; it never blocks or decides an approval. An MCP tool call (JSON-RPC) gets no
  context: its arguments are shown instead;
- :func:`fetch_and_keep` runs off the request path (a worker thread, after the agent has its
  answer) and keeps the context with the approval, a store note (one fetch per approval);
- :func:`head_now` asks again right before an approved merge or creation is sent, and
  :func:`pin` pins a merge to the head the human saw: the proxy refuses and restages when the
  head moved (``approval_head_moved``).
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from gitvow.adapter import Adapter
from gitvow.approval_context import DIFF_LIMIT, ApprovalContext, Ask, ContextError, kind_of
from gitvow.request import Request

log = logging.getLogger("gitvow_proxy")

#: Longest single answer read from the forge.
ANSWER_LIMIT = 2 * 1024 * 1024
#: The whole fetch, every request included.
CONTEXT_SECONDS = 20.0
REQUEST_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class ForgeAccess:
    """What the proxy asks the forge about an approval with (never the agent's credential):
    the adapter that judged it, credential headers for a path on its host, the upstream TLS."""

    adapter: Adapter
    headers: Callable[[str], Mapping[str, str]]
    tls: ssl.SSLContext | None


# -- reaching the forge -------------------------------------------------------------------------


def forge_get(scheme: str, host: str, port: int, headers: Callable[[str], Mapping[str, str]],
              context: ssl.SSLContext | None, deadline: float) -> Ask:
    """An :class:`~gitvow.approval_context.Ask` to one forge host; ``headers(path)`` gives the credential headers."""

    def get(method: str, path: str, body: bytes = b"", accept: str = "application/json") -> tuple[int, bytes]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError("out of time")
        sent = {"Accept": accept, "User-Agent": "gitvow-proxy", **headers(path.partition("?")[0])}
        if body:
            sent["Content-Type"] = "application/json"
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=min(left, REQUEST_SECONDS), context=context)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=min(left, REQUEST_SECONDS))
        try:
            connection.request(method, path, body=body or None, headers=sent)
            response = connection.getresponse()
            answer = response.read(ANSWER_LIMIT + 1)
        finally:
            connection.close()
        if len(answer) > ANSWER_LIMIT:
            raise OSError(f"an answer over {ANSWER_LIMIT} bytes")
        return response.status, answer

    return get


def _ask_for(url: str, access: ForgeAccess) -> Ask:
    parts = urlsplit(url)
    scheme, host = parts.scheme or "https", parts.hostname or ""
    return forge_get(scheme, host, parts.port or (443 if scheme == "https" else 80), access.headers, access.tls,
                     time.monotonic() + CONTEXT_SECONDS)


def staged_request(method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes) -> Request:
    """The staged request as its adapter reads it (ContextError when its URL cannot be read)."""
    try:
        return Request.from_url(method, url, headers={k.lower(): v for k, v in headers}, body=body)
    except ValueError as exc:
        raise ContextError(f"the staged request cannot be read ({exc})") from None


def _is_jsonrpc(body: bytes) -> bool:
    try:
        data = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return False
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and "jsonrpc" in first


# -- asking -------------------------------------------------------------------------------------


def gather(adapter: Adapter, operations: tuple[str, ...], request: Request, ask: Ask,
           now: Callable[[], float] = time.time) -> ApprovalContext | None:
    """The context of a staged request, or None when it has none (not a merge or creation, an
    adapter that declares it reads none). Never raises: a failure is a context with ``error``."""
    kind = kind_of(operations)
    if kind is None:
        return None
    try:
        if adapter.approval_unsupported().get("context"):
            return None
        if _is_jsonrpc(request.body):
            return ApprovalContext(kind, fetched_at=now(), error="an MCP tool call: the forge's context is not "
                                   "fetched for it; read the tool's arguments above")
        what = adapter.approval_subject(request, operations)
    except Exception as exc:
        return ApprovalContext(kind, fetched_at=now(), error=f"adapter {adapter.name!r} could not read the request "
                               f"({type(exc).__name__})")
    if what is None:
        return ApprovalContext(kind, fetched_at=now(),
                               error="the request does not say which pull request or branches it acts on")
    why = ""
    try:
        found = adapter.approval_context(request, what, ask)
    except Exception as exc:
        why = str(exc) if isinstance(exc, ContextError | OSError) else f"the forge's answer lacked {exc}"
    else:
        if not isinstance(found, ApprovalContext):
            why = f"adapter {adapter.name!r} answered a {type(found).__name__}, not an ApprovalContext"
    if why:
        return ApprovalContext(what.kind, repo=what.repo, fetched_at=now(), error=f"could not ask the forge: {why}",
                               number=what.number, head=what.head, base=what.base)
    return replace(found, fetched_at=now()).bounded()


def context_now(operations: tuple[str, ...], request: Request, access: ForgeAccess) -> ApprovalContext | None:
    """Worker thread: what the forge says about the approval's subject now, not kept (None: it
    has no context; raises ContextError when the forge cannot say)."""
    found = gather(access.adapter, operations, request, _ask_for(request.url, access))
    if found is not None and found.error:
        raise ContextError(found.error)
    return found


def head_now(operations: tuple[str, ...], request: Request, access: ForgeAccess) -> str:
    """Worker thread: the head sha as the forge says it now (raises ContextError when it cannot say)."""
    found = context_now(operations, request, access)
    return found.head_sha if found is not None else ""


def pin(adapter: Adapter, request: Request, head_sha: str) -> bytes:
    """The staged merge's body pinned to ``head_sha`` by its adapter; unchanged when the body
    cannot carry it (the proxy then checks the head right before it sends instead), when it
    is an MCP tool call, or when the adapter fails."""
    if not head_sha or _is_jsonrpc(request.body):
        return request.body
    try:
        pinned = adapter.pin_head(request, head_sha)
    except Exception as exc:
        log.warning("gitvow: adapter %r could not pin a merge: %s", adapter.name, type(exc).__name__)
        return request.body
    return pinned if isinstance(pinned, bytes) else request.body


# -- kept with the approval ---------------------------------------------------------------------

#: The store note (:meth:`gitvow_proxy.store.Store.annotate`) that holds an approval's context.
CONTEXT_NOTE = "context"


class _Notes(Protocol):
    def annotations(self, approval_id: str) -> dict[str, str]: ...


def stored_context(store: _Notes, approval_id: str) -> ApprovalContext | None:
    """The context kept for an approval, or None (not fetched yet, or unreadable)."""
    try:
        text = store.annotations(approval_id).get(CONTEXT_NOTE)
        return None if text is None else ApprovalContext.from_json(json.loads(text))
    except Exception:  # a note the store garbled is no context: the desk shows none
        return None


def fetch_and_keep(store: Any, approval_id: str, operations: tuple[str, ...], request: Request,
                   access: ForgeAccess) -> ApprovalContext | None:
    """Worker thread: ask the forge about a staged approval and keep the answer with it (the
    store note is the cache: one fetch per approval). Never raises."""
    try:
        found = gather(access.adapter, operations, request, _ask_for(request.url, access))
        if found is not None:
            store.annotate(approval_id, CONTEXT_NOTE, json.dumps(found.as_json()))
        return found
    except Exception as exc:  # the store is down, or worse: the approval stands without its context
        log.warning("gitvow: no context for approval %s: %s: %s", approval_id, type(exc).__name__, exc)
        return None


__all__ = [
    "ANSWER_LIMIT",
    "CONTEXT_NOTE",
    "CONTEXT_SECONDS",
    "DIFF_LIMIT",
    "ForgeAccess",
    "context_now",
    "fetch_and_keep",
    "forge_get",
    "gather",
    "head_now",
    "pin",
    "staged_request",
    "stored_context",
]
