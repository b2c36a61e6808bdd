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
import ssl
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mitmproxy import connection, ctx, http

from gitvow.approval_context import ContextError
from gitvow.denial import REASON_HEADER
from gitvow.relay import APPROVAL_HEAD_MOVED
from gitvow.request import Request
from gitvow_proxy.approval_context import ForgeAccess, staged_request
from gitvow_proxy.approvals import SENDING, Approval, new_id
from gitvow_proxy.audit import audit_approval
from gitvow_proxy.flow_metadata import APPROVAL_KEY, REFUSED_KEY
from gitvow_proxy.forge_recheck import StuckRecheck
from gitvow_proxy.identity import read_secret
from gitvow_proxy.notify import Notifier
from gitvow_proxy.resolver import tls_context
from gitvow_proxy.settings import Notify, ProxyPolicy, Webhook
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import StoreUnavailable

log = logging.getLogger("gitvow_proxy")

SEND_TIMEOUT = 120.0
#: Flow metadata of a replayed merge pinned to the head the human saw: that head.
PINNED_KEY = "gitvow.pinned"
#: Flow metadata of a replayed approval whose answer (or error) hook ran.
ANSWERED_KEY = "gitvow.answered"
#: Approved requests in flight at once.
CONCURRENT_SENDS = 8


class HeadMoved(Exception):
    """The head of an approved merge or creation is not the one the human saw."""

    def __init__(self, seen: str, now: str) -> None:
        super().__init__(f"head moved from {seen} to {now}")
        self.seen, self.now = seen, now


class Sender:
    """The proxy's loop over approved approvals."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self._tls: tuple[str | None, ssl.SSLContext] | None = None
        self._background: set[asyncio.Future[Any]] = set()
        self.notifier = Notifier(lambda: self.shared.store, self._notify_settings, self._hook_secret)
        self.recheck = StuckRecheck(shared, self.forge_access)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(CONCURRENT_SENDS)
        self._pins: dict[str, str] = {}  # approval id → the head its body was pinned to
        self._sending: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def _notify_settings(self) -> tuple[Notify | None, str | None]:
        runtime = self.shared.runtime
        if runtime is None:
            return None, None
        section = runtime.policy.section(ProxyPolicy)
        notify = section.approvals.notify
        desk = notify.desk_url if notify is not None and notify.desk_url else (
            f"http://{section.admin.listen}" if section.admin is not None else None)
        return notify, desk

    def _hook_secret(self, hook: Webhook) -> str | None:
        runtime = self.shared.runtime
        if runtime is None or (hook.secret_env is None and hook.secret_file is None):
            return None
        return read_secret(hook.secret_env, hook.secret_file, source=runtime.policy.source,
                           key="approvals.notify.webhooks")

    def stop(self) -> None:
        self.notifier.stop()
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
                await self.notifier.watch()
                await self.recheck.run()
            except StoreUnavailable:  # the store logs its outage once; try again next round
                pass
            except Exception as exc:  # the loop must outlive any one bad approval
                log.error("gitvow: the approval sender failed: %s: %s", type(exc).__name__, exc)

    async def sweep(self) -> None:
        """Expire what waited too long; claim every approved one and send each in a task of
        its own (at most ``CONCURRENT_SENDS`` at once, each within ``SEND_TIMEOUT``), so one
        hung upstream delays no other approval and no later sweep."""
        store, audit = self.shared.store, self.shared.audit
        if store is None or self.shared.runtime is None:
            return
        # The store is reached off the event loop: a hung store delays this sweep, not requests.
        for expired in await asyncio.to_thread(store.expire, time.time()):
            if audit is not None:
                audit_approval(audit, expired, "expired", reason="approval_expired")
        while (approval := await asyncio.to_thread(store.claim, time.time())) is not None:
            task = asyncio.get_running_loop().create_task(self._bounded(approval))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _bounded(self, approval: Approval) -> None:
        async with self._slots:
            try:
                await self.send(approval)
            except Exception as exc:  # a send must never take the loop down; it stays "sending"
                log.error("gitvow: sending approval %s failed: %s: %s", approval.id, type(exc).__name__, exc)

    async def send(self, approval: Approval) -> None:
        """Send one claimed approval. Every store call runs in a worker thread (each within the
        store's time bound), so a hung store delays this send, never the event loop."""
        from mitmproxy.addons.clientplayback import ReplayHandler

        try:
            approval = await self._pinned(approval)
        except HeadMoved as moved:
            self.fetch_context(await asyncio.to_thread(self._restage, approval, moved))
            return
        except ContextError as exc:
            await asyncio.to_thread(self._finish, approval, sent=False, status=None, content_type=None, body=b"",
                                    reason=str(exc))
            return
        flow = _flow(approval)
        if pinned_to := self._pins.pop(approval.id, None):
            flow.metadata[PINNED_KEY] = pinned_to
        try:
            await asyncio.wait_for(ReplayHandler(flow, ctx.options).replay(), timeout=SEND_TIMEOUT)
        except Exception as exc:
            log.error("gitvow: sending approval %s failed: %s: %s", approval.id, type(exc).__name__, exc)
        if flow.metadata.get(ANSWERED_KEY):
            return  # the answer hook ran: it recorded the outcome, or left it in sending (unknown) and said so
        await asyncio.to_thread(self._finish_unanswered, approval)

    def _finish_unanswered(self, approval: Approval) -> None:
        """Worker thread: failed, when no answer hook ran and the approval is still in sending."""
        store = self.shared.store
        current = store.approval(approval.id) if store is not None else None
        if current is not None and current.status == SENDING:
            self._finish(approval, sent=False, status=None, content_type=None, body=b"",
                         reason="the upstream did not answer")

    async def _pinned(self, approval: Approval) -> Approval:
        """The approval as it is sent: a merge pinned to the head the human saw. The head is
        asked for again first; moved (a merge or a creation) → :class:`HeadMoved`. When the
        forge cannot be asked, a pinnable merge is sent pinned (the forge refuses a moved
        head itself) and an unpinnable one (a GitLab ``/merge`` note) is not sent."""
        from gitvow.approval_context import MERGE
        from gitvow_proxy.approval_context import head_now, pin, stored_context

        store = self.shared.store
        seen = await asyncio.to_thread(stored_context, store, approval.id) if store is not None else None
        if seen is None or seen.error or not seen.head_sha:
            return approval
        access = self.forge_access(approval)
        request = staged_request(approval.method, approval.url, approval.headers, approval.body)
        now: str | None = None
        if access is not None:
            try:
                now = await asyncio.to_thread(head_now, approval.operations, request, access)
            except Exception as exc:
                log.warning("gitvow: approval %s: the head could not be asked for: %s", approval.id, exc)
        if now and now != seen.head_sha:
            raise HeadMoved(seen.head_sha, now)
        if seen.kind != MERGE:
            return approval
        pinned = pin(access.adapter, request, seen.head_sha) if access is not None else approval.body
        if now is None and pinned == approval.body:
            raise ContextError("not sent: the forge could not say whether the head moved since it was approved, "
                               "and this merge cannot carry the head the human saw")
        if pinned != approval.body:
            self._pins[approval.id] = seen.head_sha
        return approval.with_(body=pinned)

    def _restage(self, approval: Approval, moved: HeadMoved) -> Approval | None:
        """Not sent: the head moved after the human saw it. Failed with ``approval_head_moved``,
        and staged again (a new id) with what the forge says now, for a human to look at anew.
        Runs in a worker thread (it reaches the store); returns the approval staged anew, whose
        context the caller fetches (None: one of the same request stood already)."""
        store, audit, runtime = self.shared.store, self.shared.audit, self.shared.runtime
        if store is None:
            return None
        now = time.time()
        ttl = runtime.policy.section(ProxyPolicy).approvals.ttl if runtime is not None else 86400
        fresh = Approval(id=new_id(), fingerprint=approval.fingerprint, agent=approval.agent,
                         operations=approval.operations, repo=approval.repo, adapter=approval.adapter,
                         method=approval.method, url=approval.url, headers=approval.headers, body=approval.body,
                         created=now, expires=now + ttl)
        moved_to = moved.now[:12] if all(c in "0123456789abcdef" for c in moved.now) else moved.now
        why = (f"the head moved from {moved.seen[:12]} to {moved_to} after it was approved; staged again as "
               f"approval {fresh.id}. reason={APPROVAL_HEAD_MOVED}")
        self._finish(approval, sent=False, status=None, content_type=None, body=b"", reason=why, code=APPROVAL_HEAD_MOVED)
        staged = store.stage(fresh, now)
        if staged.id != fresh.id:
            return None
        if audit is not None:
            audit_approval(audit, staged, "staged", reason=APPROVAL_HEAD_MOVED, note=f"restaged from {approval.id}")
        return staged

    # -- asking the forge about an approval ------------------------------------------------

    def forge_access(self, approval: Approval) -> ForgeAccess | None:
        """The adapter that judged the approval, credential headers for a path on its forge
        host, and the upstream TLS context: what the proxy asks the forge about an approval
        with (never the agent's)."""
        runtime = self.shared.runtime
        adapter = runtime.engine.adapters.get(approval.adapter) if runtime is not None else None
        if runtime is None or adapter is None:
            return None
        token = runtime.gates.credentials.get(adapter.name)
        parts = urlsplit(approval.url)
        scheme, host = parts.scheme or "https", parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)

        def headers(path: str) -> Mapping[str, str]:
            if not token:
                return {}
            return adapter.credential_headers(Request(method="GET", host=host, path=path, port=port, scheme=scheme),
                                              token)

        extra = runtime.policy.section(ProxyPolicy).proxy.upstream_ca
        if not extra:
            extra = getattr(ctx.options, "ssl_verify_upstream_trusted_ca", None) or None
        if self._tls is None or self._tls[0] != extra:
            self._tls = (extra, tls_context(extra))
        return ForgeAccess(adapter, headers, self._tls[1])

    def fetch_context(self, approval: Approval | None) -> None:
        """Ask the forge about a new approval in a worker thread: the agent has its answer
        already, and nothing waits for this (a failure is kept as the context's error)."""
        from gitvow_proxy.approval_context import fetch_and_keep

        if approval is None:
            return
        access = self.forge_access(approval)
        if access is None or self.shared.store is None:
            return
        request = staged_request(approval.method, approval.url, approval.headers, approval.body)
        task = asyncio.get_running_loop().run_in_executor(
            None, fetch_and_keep, self.shared.store, approval.id, approval.operations, request, access)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def answered(self, flow: http.HTTPFlow) -> None:
        """The replayed approval's response (or error) hook: record what happened, once, in a
        task of its own that reaches the store in a worker thread (the hook returns at once).
        When recording fails (the store is unreachable) the approval stays in ``sending``: the
        forge may have acted, so it is left stuck (re-checked with the forge, or resolved by an
        operator), never marked failed by :meth:`send` and never sent again."""
        flow.metadata[ANSWERED_KEY] = True
        task = asyncio.get_running_loop().create_task(self._recorded(flow))
        self.shared.finishing.add(task)  # a graceful stop waits for it, as for a request in flight
        task.add_done_callback(self.shared.finishing.discard)

    async def _recorded(self, flow: http.HTTPFlow) -> None:
        try:
            self.fetch_context(await asyncio.to_thread(self._record, flow))
        except Exception as exc:
            log.error("gitvow: approval %s: the forge's answer could not be recorded (%s: %s); it stays in sending "
                      "until an operator resolves it", flow.metadata[APPROVAL_KEY][0], type(exc).__name__, exc)

    def _record(self, flow: http.HTTPFlow) -> Approval | None:
        """Worker thread: the outcome of a replayed approval into the store; the approval staged
        anew when the forge refused the pinned head."""
        approval_id, _agent = flow.metadata[APPROVAL_KEY]
        store = self.shared.store
        approval = store.approval(approval_id) if store is not None else None
        if approval is None or approval.status != SENDING:
            return None
        refused = flow.metadata.get(REFUSED_KEY)
        response = flow.response
        if refused is not None and response is not None:
            self._finish(approval, sent=False, status=response.status_code,
                         content_type=response.headers.get("content-type"), body=response.raw_content or b"",
                         reason=str(refused), code=response.headers.get(REASON_HEADER))
        elif response is not None and response.status_code == 409 and PINNED_KEY in flow.metadata:
            # The forge refused the pinned head: it moved between our last look and the merge.
            return self._restage(approval, HeadMoved(flow.metadata[PINNED_KEY], "a newer commit"))
        elif response is not None:
            self._finish(approval, sent=True, status=response.status_code,
                         content_type=response.headers.get("content-type"), body=response.content or b"")
        else:
            error = flow.error.msg if flow.error is not None else "no response"
            self._finish(approval, sent=False, status=None, content_type=None, body=b"",
                         reason=f"the upstream could not be reached: {error}")
        return None

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


__all__ = ["HeadMoved", "Sender"]

