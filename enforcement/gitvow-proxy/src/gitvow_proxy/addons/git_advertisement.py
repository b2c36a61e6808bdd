"""The git advertisement addon: ``no-thin`` added to receive-pack advertisements, the default
branch remembered from upload-pack ones (:mod:`gitvow_proxy.advertisement`).

It reads only answers the proxy forwarded (``SENT_KEY``), before :class:`ScrubAndRecord`
scrubs them. A failure leaves the answer as the forge sent it: a later push is judged as
ever (a thin pack is refused, the default branch is asked of the forge).
"""

from __future__ import annotations

import logging

from mitmproxy import http

from gitvow.request import Request
from gitvow_proxy import advertisement
from gitvow_proxy.flow_metadata import SENT_KEY
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")


class GitAdvertisement:
    """One concern: git's ref advertisements on their way back to the agent."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    def response(self, flow: http.HTTPFlow) -> None:
        sent = flow.metadata.get(SENT_KEY)
        runtime = self.shared.runtime
        req = flow.request
        if sent is None or runtime is None or flow.response is None:
            return
        path, _, query = req.path.partition("?")
        if not path.endswith(("/info/refs", "/git-upload-pack")):
            return
        request = Request(method=req.method, host=req.host.lower(), path=path, query=query, port=req.port,
                          scheme=req.scheme)
        try:
            classification = runtime.engine.classify(request)[1]
            repo = classification.repo if classification is not None else None
            advertisement.on_response(flow, request, sent[0], repo, runtime.gates.resolutions)
        except Exception as exc:
            log.error("gitvow: could not read a ref advertisement: %s: %s", type(exc).__name__, exc)


__all__ = ["GitAdvertisement"]
