"""Asking the forge what an opaque identifier names, with the credential the proxy holds.

The engine yields a :class:`gitvow.needs.Lookup` when a repository gate needs a target; the
enforcement addon answers it from the cache of the forge's answers, and what the cache does
not know it asks with :func:`resolve_targets` in a worker thread (so other flows keep moving
on mitmproxy's event loop), then sends the engine the answers. The
lookup goes straight to the forge host the agent's request was for, over the same scheme,
with the adapter's credential headers: the agent never sees it, and it is not a flow of
its own (nothing of it is audited as the agent's).
"""

from __future__ import annotations

import http.client
import logging
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitvow.adapter import Adapter
from gitvow.githead import HEAD_KINDS, TREES_KIND, resolve_heads
from gitvow.request import Request, Resolution, Target
from gitvow.targets import Fetch, ResolutionCache

log = logging.getLogger("gitvow_proxy.resolver")

#: Longest answer read from the forge; a lookup answer is a few hundred bytes.
ANSWER_LIMIT = 1024 * 1024
TIMEOUT = 10.0


def tls_context(extra_ca: str | None) -> ssl.SSLContext:
    """The system's CAs plus ``extra_ca`` (``[proxy] upstream_ca``), hostname checked."""
    context = ssl.create_default_context()
    if extra_ca:
        context.load_verify_locations(cafile=str(Path(extra_ca).expanduser()))
    return context


def forge_fetch(request: Request, adapter: Adapter, token: str | None, context: ssl.SSLContext | None,
                *, timeout: float = TIMEOUT, headers: Mapping[str, str] | None = None,
                limit: int = ANSWER_LIMIT) -> Fetch:
    """A :data:`~gitvow.targets.Fetch` to the host of ``request`` carrying the adapter's credential.
    ``headers`` replace the JSON ones (git's upload-pack speaks its own); an answer over
    ``limit`` bytes is a failed lookup."""
    sent: dict[str, str] = dict(headers) if headers is not None else {"Accept": "application/json"}

    def fetch(method: str, target: str, body: bytes) -> tuple[int, bytes]:
        path, _, query = target.partition("?")
        lookup = Request(method=method, host=request.host, path=path, query=query, body=body, port=request.port,
                         scheme=request.scheme)
        headers = {**sent, "User-Agent": "gitvow-proxy"}
        if body and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json"
        if token:
            headers.update(adapter.credential_headers(lookup, token))
        connection: http.client.HTTPConnection
        if request.scheme == "https":
            connection = http.client.HTTPSConnection(request.host, request.port, timeout=timeout, context=context)
        else:
            connection = http.client.HTTPConnection(request.host, request.port, timeout=timeout)
        try:
            connection.request(method, target, body=body or None, headers=headers)
            response = connection.getresponse()
            answer = response.read(limit + 1)
        finally:
            connection.close()
        if len(answer) > limit:
            raise OSError("the forge's answer is over the lookup limit")
        return response.status, answer

    return fetch


#: The most of a failed lookup's message a log line keeps.
FAILURE_LIMIT = 300


def failure(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """A failed lookup as one log line: its class and message (``PackError: the forge refused
    the fetch``), on one line, at most :data:`FAILURE_LIMIT` characters, with each of
    ``secrets`` (the credential the lookup carried, which an error may quote) redacted."""
    message = " ".join(str(exc).split())
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        message = message.replace(secret, "[redacted]")
    if len(message) > FAILURE_LIMIT:
        message = message[: FAILURE_LIMIT - 1] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _credentials(adapter: Adapter, request: Request, token: str | None) -> list[str]:
    """The token and every form the adapter's headers carry it in (``Basic <base64>`` and its part)."""
    if not token:
        return []
    try:
        values = list(adapter.credential_headers(request, token).values())
    except Exception:  # the lookup failed anyway: redact the token itself
        values = []
    return [token, *values, *(value.split(" ", 1)[1] for value in values if " " in value)]


def resolve_targets(
    scope: str,
    targets: Sequence[Target],
    cache: ResolutionCache,
    adapter: Adapter,
    request: Request,
    token: str | None,
    context: ssl.SSLContext | None,
) -> None:
    """Resolve ``targets`` through ``adapter`` and remember the answers (failures included)."""
    fetch = forge_fetch(request, adapter, token, context)

    def ask(targets: Sequence[Target]) -> Mapping[Target, Resolution]:
        heads = [t for t in targets if t.kind in HEAD_KINDS]
        try:
            if any(t.kind == TREES_KIND for t in targets):  # a push's parent trees: git's upload-pack
                return _trees(targets, request, adapter, token, context)
            if heads:  # the default branch: git's own advertisement, the same on every forge
                others = [t for t in targets if t.kind not in HEAD_KINDS]
                return {**resolve_heads(heads, fetch), **(adapter.resolve(others, fetch) if others else {})}
            return adapter.resolve(targets, fetch)
        except Exception as exc:
            log.warning("gitvow: adapter %r could not resolve %d target(s) on %s: %s", adapter.name, len(targets),
                        scope, failure(exc, _credentials(adapter, request, token)))
            raise

    cache.resolve(scope, targets, ask)


def _trees(targets: Sequence[Target], request: Request, adapter: Adapter, token: str | None,
           context: ssl.SSLContext | None) -> Mapping[Target, Resolution]:
    """Parent commits' trees, fetched with upload-pack (``filter blob:none``, ``deepen 1``) by
    the git smart-HTTP reader, which remembers them (:mod:`gitvow_gitsmart.oldtrees`)."""
    from gitvow_gitsmart.oldtrees import TREES_LIMIT, UPLOAD_HEADERS, resolve_trees

    fetch = forge_fetch(request, adapter, token, context, headers=UPLOAD_HEADERS, limit=TREES_LIMIT + 64 * 1024)
    return resolve_trees([t for t in targets if t.kind == TREES_KIND], fetch)
