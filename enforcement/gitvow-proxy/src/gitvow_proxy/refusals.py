"""The proxy's own answers: the plain one-line refusal and the refusal in the adapter's shape.

Every addon that refuses builds its answer here, so a status, its reason header and its
body are spelled the same way wherever the refusal comes from.
"""

from __future__ import annotations

import logging

from mitmproxy import http

from gitvow import denial, refusal
from gitvow.request import Request
from gitvow_proxy.runtime import Runtime

log = logging.getLogger("gitvow_proxy")

HOST_NOT_SERVED = "host_not_served"
INSECURE_UPSTREAM = "insecure_upstream"
UNSUPPORTED_PROTOCOL = "unsupported_protocol"
PROXY_AUTH = "proxy_auth"


def plain_refusal(status: int, message: str, code: str, **headers: str) -> http.Response:
    """``message`` as one text line, with the reason code in ``X-Gitvow-Reason``."""
    return http.Response.make(
        status,
        message + "\n",
        {"Content-Type": "text/plain; charset=utf-8", denial.REASON_HEADER: code, **headers},
    )


def shaped_refusal(runtime: Runtime, request: Request, adapter: str | None, status: int, message: str, code: str,
                   headers: dict[str, str]) -> http.Response:
    """A refusal in the shape the adapter's clients print (its ``refusal_answer``, which may
    set the status: git's push is refused inside a 200 report); the plain line at ``status``
    if the adapter fails."""
    answer = refusal.Answer(*refusal.plain(message))
    plugin = runtime.engine.adapters.get(adapter) if adapter else None
    if plugin is not None:
        try:
            answer = plugin.refusal_answer(request, message, code, status)
        except Exception as exc:
            log.error("gitvow: adapter %r raised in refusal_answer: %s: %s", adapter, type(exc).__name__, exc)
    return http.Response.make(answer.status or status, answer.body, {**headers, "Content-Type": answer.content_type})


__all__ = ["HOST_NOT_SERVED", "INSECURE_UPSTREAM", "PROXY_AUTH", "UNSUPPORTED_PROTOCOL", "plain_refusal",
           "shaped_refusal"]
