"""Who sends an approved request upstream: the proxy, once.

The proxy alone holds the forge credential, so it, not the CLI or the desk, sends what a human
approved. Every ``[approvals] poll_interval`` it expires pending approvals past their ``ttl``
and claims approved ones from the store (``approved → sending``, atomic: with several proxies
on one store, one of them gets each). Each claimed request is replayed through mitmproxy's own
client-replay machinery, so it passes the same addons: the gates that still apply run (a paused
repository is not written, the budget counts it, the canary scan runs), the credential is
injected, the response is scrubbed; only the policy stage is satisfied by the approval. The
upstream's status and body are recorded (``sent``); a gate's refusal or an unreachable upstream
is recorded as ``failed`` with its line. A proxy that dies mid-send leaves the approval in
``sending``: it is never sent twice, and ``gitvow approvals show`` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from mitmproxy import connection, ctx, http

from gitvow.denial import REASON_HEADER
from gitvow_proxy.approvals import SENDING, Approval
from gitvow_proxy.audit import audit_approval
from gitvow_proxy.flow_metadata import APPROVAL_KEY, REFUSED_KEY
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import StoreUnavailable

log = logging.getLogger("gitvow_proxy")

SEND_TIMEOUT = 120.0


class Sender:
    """The proxy's loop over approved approvals."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def wake(self) -> None:
        """Look now (the desk calls this from its thread after an approval)."""
        task = self._task
        if task is not None:
            task.get_loop().call_soon_threadsafe(self._wake.set)

    async def _loop(self) -> None:
        while True:
            runtime = self.shared.runtime
            interval = runtime.policy.section(ProxyPolicy).approvals.poll_interval if runtime else 1.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=interval)
            self._wake.clear()
            try:
                await self.sweep()
            except StoreUnavailable:  # the store logs its outage once; try again next round
                pass
            except Exception as exc:  # the loop must outlive any one bad approval
                log.error("gitvow: the approval sender failed: %s: %s", type(exc).__name__, exc)

    async def sweep(self) -> None:
        store, audit = self.shared.store, self.shared.audit
        if store is None or self.shared.runtime is None:
            return
        for expired in store.expire(time.time()):
            if audit is not None:
                audit_approval(audit, expired, "expired", reason="approval_expired")
        while (approval := store.claim(time.time())) is not None:
            await self.send(approval)

    async def send(self, approval: Approval) -> None:
        from mitmproxy.addons.clientplayback import ReplayHandler

        flow = _flow(approval)
        try:
            await asyncio.wait_for(ReplayHandler(flow, ctx.options).replay(), timeout=SEND_TIMEOUT)
        except Exception as exc:
            log.error("gitvow: sending approval %s failed: %s: %s", approval.id, type(exc).__name__, exc)
        store = self.shared.store
        if store is not None:
            current = store.approval(approval.id)
            if current is not None and current.status == SENDING:  # no hook recorded an answer
                self._finish(approval, sent=False, status=None, content_type=None, body=b"",
                             reason="the upstream did not answer")

    def answered(self, flow: http.HTTPFlow) -> None:
        """The replayed approval's response (or error) hook: record what happened, once."""
        approval_id, _agent = flow.metadata[APPROVAL_KEY]
        store = self.shared.store
        approval = store.approval(approval_id) if store is not None else None
        if approval is None or approval.status != SENDING:
            return
        refused = flow.metadata.get(REFUSED_KEY)
        response = flow.response
        if refused is not None and response is not None:
            self._finish(approval, sent=False, status=response.status_code,
                         content_type=response.headers.get("content-type"), body=response.raw_content or b"",
                         reason=str(refused), code=response.headers.get(REASON_HEADER))
        elif response is not None:
            self._finish(approval, sent=True, status=response.status_code,
                         content_type=response.headers.get("content-type"), body=response.content or b"")
        else:
            error = flow.error.msg if flow.error is not None else "no response"
            self._finish(approval, sent=False, status=None, content_type=None, body=b"",
                         reason=f"the upstream could not be reached: {error}")

    def _finish(self, approval: Approval, *, sent: bool, status: int | None, content_type: str | None, body: bytes,
                reason: str | None = None, code: str | None = None) -> None:
        store, audit = self.shared.store, self.shared.audit
        if store is None:
            return
        done = store.finish(approval.id, sent=sent, status=status, content_type=content_type, body=body,
                            now=time.time(), reason=reason)
        if audit is not None:
            note = f"upstream answered {status}" if sent else reason
            audit_approval(audit, done, "sent" if sent else "send_failed", reason=code, note=note)
        log.info("gitvow: approval %s %s (%s)", approval.id, "sent" if sent else "not sent", status or reason)


def _flow(approval: Approval) -> http.HTTPFlow:
    """A flow carrying the staged request, as if its agent had just sent it."""
    now = time.time()
    client = connection.Client(peername=("127.0.0.1", 0), sockname=("127.0.0.1", 0), timestamp_start=now)
    scheme, _, rest = approval.url.partition("://")
    authority = rest.partition("/")[0]
    host, _, port = authority.rpartition(":")
    server = connection.Server(address=(host, int(port)))
    flow = http.HTTPFlow(client, server)
    default = 443 if scheme == "https" else 80
    headers: list[tuple[bytes, bytes]] = [(b"host", (host if int(port) == default else authority).encode())]
    headers += [(k.encode(), v.encode()) for k, v in approval.headers]
    flow.request = http.Request.make(approval.method, approval.url, approval.body, http.Headers(headers))
    flow.metadata[APPROVAL_KEY] = (approval.id, approval.agent)
    flow.is_replay = "request"
    return flow


__all__ = ["Sender"]

