"""Telling people that an approval waits, or what became of it: ``[approvals.notify]`` webhooks.

Each event (``staged``, ``approved``, ``rejected``, ``expired``, ``sent``, ``failed``) goes to
every webhook that asked for it, in one of two shapes:

- ``json``: ``{"event", "approval": {...as gitvow approvals show --json, without bodies}, "desk"}``
  with ``X-Gitvow-Event``, ``X-Gitvow-Delivery`` (``ID:event``, the same on every retry, for a
  receiver to drop duplicates) and, with a secret, ``X-Gitvow-Signature: sha256=<HMAC of the body>``;
- ``slack``: ``{"text": …}`` for a Slack-compatible incoming webhook, with a link to the
  approval on the desk.

Events are read from the store, not from whoever changed it: the CLI and the desk decide in
other processes, so the proxy's sender loop looks at recent approvals every round
(:meth:`Notifier.watch`) and sends each event once (what it sent is kept as a store note, so a
restart does not send it again). Delivery runs in tasks of its own with retries and
exponential backoff (1, 2, 4, … s, ``attempts`` in all); a delivery that fails for good is
marked so. Nothing here ever decides, changes or loses an approval: its status is only read,
and its delivery state is a note beside it (``gitvow approvals show`` and the desk show it).
With several replicas on one store each may send an event once (the delivery id lets a
receiver see that).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.client
import json
import logging
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from gitvow_proxy.approvals import APPROVED, EXPIRED, FAILED, PENDING, REJECTED, SENDING, SENT, Approval
from gitvow_proxy.settings import Notify, Webhook
from gitvow_proxy.store import Store

log = logging.getLogger("gitvow_proxy")

#: Status → the event that put the approval there.
EVENTS = {PENDING: "staged", APPROVED: "approved", REJECTED: "rejected", EXPIRED: "expired", SENT: "sent",
          FAILED: "failed"}
#: Approvals changed longer than this before the proxy started are not announced.
LOOKBACK = 300.0


def events_of(approval: Approval) -> list[str]:
    """Every event an approval went through to reach its status, in order: one the watcher
    missed (a send claimed in the same round as the approval) is still told."""
    found = ["staged"]
    if approval.decided_by and approval.status in (APPROVED, SENDING, SENT, FAILED):
        found.append("approved")
    last = EVENTS.get(approval.status)
    if last is not None and last not in found:
        found.append(last)
    return found
#: The store notes: events already queued, and each delivery's state.
QUEUED_NOTE = "notify.queued"
STATE_NOTE = "notify"
#: How many of the newest approvals each round looks at.
WATCH = 200
SIGNATURE_HEADER = "X-Gitvow-Signature"


def signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: what a receiver recomputes with the shared secret to trust a payload."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _slack_text(text: str) -> str:
    """Text an agent wrote, made inert for Slack: no ``<link|label>``, mention or markup of its own."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def payload(hook: Webhook, event: str, approval: Approval, link: str | None, repo: str | None) -> bytes:
    """The body one webhook gets for one event."""
    if hook.format == "slack":
        summary = approval.summary()
        title = summary.get("title")
        what = f"{', '.join(approval.operations)} on {repo or approval.repo or 'an unknown repository'}"
        text = _slack_text(f"gitvow: approval {approval.id} {event}: {approval.agent} asks for {what}")
        if isinstance(title, str) and title:
            text += f" ({_slack_text(title)})"
        if approval.status == FAILED and approval.reason:
            text += f". Not sent: {_slack_text(approval.reason)}"
        if link:
            text += f". <{link}|Open it on the desk>"
        return json.dumps({"text": text}).encode()
    data = {"event": event, "approval": {**approval.as_json(), "repo": approval.repo or repo}, "desk": link,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    return json.dumps(data).encode()


def post(url: str, body: bytes, headers: dict[str, str], timeout: float, tls: ssl.SSLContext | None) -> int:
    """One POST; the status (raises OSError when the receiver cannot be reached)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, parts.port or 443, timeout=timeout, context=tls)
    else:
        connection = http.client.HTTPConnection(host, parts.port or 80, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers={"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        response.read(64 * 1024)
        return response.status
    finally:
        connection.close()


class Notifier:
    """Watches the store for approval events and delivers them to ``[approvals.notify]``."""

    def __init__(self, store: Callable[[], Store | None], settings: Callable[[], tuple[Notify | None, str | None]],
                 secret: Callable[[Webhook], str | None], *, first_delay: float = 1.0) -> None:
        self.store = store
        self.settings = settings
        self.secret = secret
        self.first_delay = first_delay
        self._tasks: set[asyncio.Task[None]] = set()
        self._tls: ssl.SSLContext | None = None
        self.since = time.time() - LOOKBACK
        self._looked: dict[str, str] = {}
        self._state_lock = threading.Lock()

    async def watch(self) -> None:
        """Queue a delivery of every event not queued yet (called each sender round). The
        store is read and the queued events noted in a worker thread, never on the event loop."""
        notify, desk = self.settings()
        if self.store() is None or notify is None or not notify.webhooks:
            return
        for approval, new in await asyncio.to_thread(self._unqueued):
            for event in new:
                for index, hook in enumerate(notify.webhooks):
                    if event in hook.events:
                        task = asyncio.get_running_loop().create_task(
                            self._deliver(notify, desk, index, hook, event, approval))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)

    def _unqueued(self) -> list[tuple[Approval, list[str]]]:
        """Worker thread: each recent approval's events not queued yet, noted as queued now."""
        store = self.store()
        if store is None:
            return []
        recent = store.approvals(limit=WATCH)
        if len(self._looked) > 4 * WATCH:
            ids = {a.id for a in recent}
            self._looked = {k: v for k, v in self._looked.items() if k in ids}
        found: list[tuple[Approval, list[str]]] = []
        for approval in recent:
            if approval.updated < self.since or self._looked.get(approval.id) == approval.status:
                continue  # (the store is asked about an approval again only when its status changed)
            self._looked[approval.id] = approval.status
            queued = set(json.loads(store.annotations(approval.id).get(QUEUED_NOTE, "[]")))
            new = [event for event in events_of(approval) if event not in queued]
            if new:
                store.annotate(approval.id, QUEUED_NOTE, json.dumps(sorted(queued | set(new))))
                found.append((approval, new))
        return found

    async def _deliver(self, notify: Notify, desk: str | None, index: int, hook: Webhook, event: str,
                       approval: Approval) -> None:
        from gitvow_proxy.approval_context import stored_context

        store = self.store()
        if store is None:
            return
        context = await asyncio.to_thread(stored_context, store, approval.id)
        link = f"{desk.rstrip('/')}/login?approval={approval.id}" if desk else None
        body = payload(hook, event, approval, link, context.repo if context is not None else None)
        headers = {"X-Gitvow-Event": event, "X-Gitvow-Delivery": f"{approval.id}:{event}"}
        secret = self.secret(hook) if hook.format == "json" else None
        if secret:
            headers[SIGNATURE_HEADER] = signature(secret, body)
        key = f"{event} to {hook.format} webhook {index + 1}"
        delay = self.first_delay
        why = ""
        for attempt in range(1, notify.attempts + 1):
            try:
                status = await asyncio.to_thread(post, hook.url, body, headers, notify.timeout, self._context())
                if 200 <= status < 300:
                    await asyncio.to_thread(self._state, approval.id, key, f"delivered (attempt {attempt})")
                    return
                why = f"answered {status}"
            except OSError as exc:
                why = f"unreachable: {type(exc).__name__}"
            if attempt < notify.attempts:
                await asyncio.to_thread(self._state, approval.id, key, f"retrying: attempt {attempt} {why}")
                await asyncio.sleep(delay)
                delay *= 2
        await asyncio.to_thread(self._state, approval.id, key, f"not delivered after {notify.attempts} attempts: {why}")
        log.warning("gitvow: approval %s: %s not delivered: %s", approval.id, key, why)

    def _state(self, approval_id: str, key: str, state: str) -> None:
        """Worker thread: keep one delivery's state on the approval."""
        store = self.store()
        if store is None:
            return
        try:
            with self._state_lock:  # deliveries run in threads: one read-modify-write at a time
                states = json.loads(store.annotations(approval_id).get(STATE_NOTE, "{}"))
                states[key] = state
                store.annotate(approval_id, STATE_NOTE, json.dumps(states))
        except Exception as exc:  # the delivery state is a note: losing it loses nothing else
            log.warning("gitvow: approval %s: delivery state not kept: %s", approval_id, type(exc).__name__)

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def delivery_state(store: Store, approval_id: str) -> dict[str, str]:
    """Each delivery of an approval's events → its state, for the desk and the CLI."""
    try:
        found: Any = json.loads(store.annotations(approval_id).get(STATE_NOTE, "{}"))
    except Exception:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


__all__ = ["EVENTS", "SIGNATURE_HEADER", "Notifier", "delivery_state", "events_of", "payload", "signature"]
