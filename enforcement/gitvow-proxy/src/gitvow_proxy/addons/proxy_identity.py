"""The identity addon: who is asking, from ``Proxy-Authorization``; 407 when nobody proved it.

A request is checked once (``requestheaders``, before its body is read) against the policy
in force, from its own header or its connection's CONNECT; the answer is kept per connection
and header and re-checked after a reload. The proven caller is left on the flow
(:data:`~gitvow_proxy.flow_metadata.IDENTITY_KEY`) for the enforcement addon, which refuses
any request that carries none. The 407 answer is built here and only here.
"""

from __future__ import annotations

from mitmproxy import connection, http

from gitvow.pipeline import INTERNAL_ERROR
from gitvow_proxy.flow_metadata import APPROVAL_KEY, AUDIT_KEY, IDENTITY_KEY, Audited
from gitvow_proxy.identity import PROXY_AUTHENTICATE, Identity
from gitvow_proxy.refusals import PROXY_AUTH, plain_refusal
from gitvow_proxy.runtime import Runtime
from gitvow_proxy.shared import Shared

NO_POLICY = "gitvow has no valid policy loaded"


def proxy_authorization(headers: http.Headers) -> str:
    """``headers.get("proxy-authorization")`` ("" when absent), read in one pass over the raw
    fields: mitmproxy's lookup lower-cases and decodes every field through two calls each, and
    this runs for every request. Several fields are folded with ", " as mitmproxy folds them
    (so a request carrying two proves nothing, as before)."""
    values = [value for name, value in headers.fields if name.lower() == b"proxy-authorization"]
    if not values:
        return ""
    return ", ".join(value.decode("utf-8", "surrogateescape") for value in values)


def _authentication_required(flow: http.HTTPFlow) -> None:
    """Answer 407 (with the challenge clients need to send credentials) and audit it."""
    flow.response = plain_refusal(407, "gitvow: proxy authentication required", PROXY_AUTH,
                                  **{"Proxy-Authenticate": PROXY_AUTHENTICATE})
    req = flow.request
    flow.metadata[AUDIT_KEY] = Audited(req.method, f"{req.host}:{req.port}", req.path, None, "refuse", PROXY_AUTH,
                                       "identity")


class ProxyIdentity:
    """Proves each request's caller; answers 503 while no policy is loaded, 407 on no proof."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self._auth: dict[str, str] = {}  # client connection id → its CONNECT's Proxy-Authorization

    def client_disconnected(self, client: connection.Client) -> None:
        self._auth.pop(client.id, None)

    def _identify(self, runtime: Runtime, flow: http.HTTPFlow) -> Identity | None:
        """The caller, from this request's Proxy-Authorization or its connection's CONNECT."""
        conn = flow.client_conn.id
        header = proxy_authorization(flow.request.headers) or self._auth.get(conn, "")
        if not header:
            return None
        return runtime.identities.authenticate(header)

    def _prove(self, flow: http.HTTPFlow) -> Identity | None:
        """Leave the caller on the flow, or answer 503/407 and return None."""
        runtime = self.shared.runtime
        if APPROVAL_KEY in flow.metadata:  # an approved request the sender replays: no agent sent it
            identity: Identity | None = Identity(flow.metadata[APPROVAL_KEY][1])
        elif runtime is None:
            flow.response = plain_refusal(503, NO_POLICY, INTERNAL_ERROR)
            return None
        else:
            identity = self._identify(runtime, flow)
        if identity is None:
            _authentication_required(flow)
            return None
        flow.metadata[IDENTITY_KEY] = (identity, runtime)
        return identity

    def http_connect(self, flow: http.HTTPFlow) -> None:
        header = proxy_authorization(flow.request.headers)
        if self._prove(flow) is not None and header:
            self._auth[flow.client_conn.id] = header

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Refuse unauthenticated requests before their body is read."""
        self._prove(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        """Prove the caller again if the policy was reloaded since ``requestheaders``."""
        if flow.response is not None:
            return
        proven = flow.metadata.get(IDENTITY_KEY)
        if proven is None or proven[1] is not self.shared.runtime:
            self._prove(flow)


__all__ = ["ProxyIdentity"]
