"""The approval relay addon: stages what the ``approval`` relay refused, and sends what a
human approved (:mod:`gitvow_proxy.sender`), once.

The enforcement addon answers a stageable refusal with that refusal and leaves it on the
flow (:data:`~gitvow_proxy.flow_metadata.STAGED_KEY`); this addon keeps the exact request in
the store (:mod:`gitvow_proxy.approvals`), or finds it staged already, and answers with the
approval's state: pending (403 with its id), rejected or expired (403 saying so) or sent (the
upstream's recorded answer, never a second send). It also records the answer to each
approved request the sender replayed.
"""

from __future__ import annotations

import asyncio
import logging
import time

from mitmproxy import http

from gitvow import denial
from gitvow.pipeline import INTERNAL_ERROR
from gitvow.relay import APPROVAL_EXPIRED, APPROVAL_REJECTED
from gitvow.verdict import Verdict
from gitvow_proxy import approvals
from gitvow_proxy.audit import audit_approval
from gitvow_proxy.flow_metadata import APPROVAL_KEY, AUDIT_KEY, REFUSED_KEY, STAGED_KEY, Audited, StagedRefusal
from gitvow_proxy.gates import UNAVAILABLE_RETRY
from gitvow_proxy.refusals import plain_refusal, shaped_refusal
from gitvow_proxy.sender import Sender
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import STATE_UNAVAILABLE, StoreUnavailable
from gitvow_proxy.stuck import (
    APPROVAL_RESOLVED_SENT,
    APPROVAL_SENDING,
    APPROVAL_STUCK,
    RECORDS_LOST,
    is_stuck,
    records_lost_note,
    stuck_note,
)

log = logging.getLogger("gitvow_proxy")

#: The reason code of a request not staged because its agent has too many approvals waiting.
APPROVAL_CAP = "approval_cap"
#: Approvals that count against an agent's cap: not decided yet, or approved and not sent yet.
WAITING = (approvals.PENDING, approvals.APPROVED, approvals.SENDING)


def candidate(flow: http.HTTPFlow, staged: StagedRefusal, now: float) -> approvals.Approval:
    """A new approval of the refused request, exactly as the agent sent it."""
    decision = staged.decision
    if decision.classification is None:
        raise RuntimeError("internal error: decision.classification unset")
    req = flow.request
    url = f"{req.scheme}://{req.host}:{req.port}{req.path}"
    body = req.raw_content or b""
    return approvals.Approval(
        id=approvals.new_id(),
        fingerprint=approvals.fingerprint(staged.identity.name, req.method, url, body),
        agent=staged.identity.name,
        operations=decision.classification.operations,
        repo=decision.classification.repo,
        adapter=decision.adapter or "",
        method=req.method,
        url=url,
        headers=tuple(approvals.kept_headers(list(req.headers.items(multi=True)))),  # type: ignore[no-untyped-call]
        body=body,
        created=now,
        expires=now + staged.runtime.policy.section(ProxyPolicy).approvals.ttl,
    )


class ApprovalRelay:
    """Stages refused requests for a human; runs the sender of approved ones."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.sender = Sender(shared)
        shared.wake_sender = self.sender.wake
        self._seen_epoch: float | None = None

    def running(self) -> None:
        self.sender.start()
        # When the store's records began, read once off the loop: a later one means they were lost.
        asyncio.get_running_loop().run_in_executor(None, self._epoch_changed)

    def _epoch_changed(self) -> tuple[float, float] | None:
        """``(seen, now)`` when the store's records began later than this replica first saw
        (the shared store restarted empty since); None otherwise (also the first time)."""
        store = self.shared.store
        try:
            now = store.epoch() if store is not None else None
        except Exception:  # unreachable now: nothing is known, nothing is claimed
            return None
        if now is None:
            return None
        if self._seen_epoch is None:
            self._seen_epoch = now
            return None
        return (self._seen_epoch, now) if now > self._seen_epoch else None

    def _mark_if_records_lost(self, approval: approvals.Approval) -> None:
        """A request staged anew after the store lost its records carries a warning for the
        human: it may have been approved and sent before (its sent record is gone)."""
        lost = self._epoch_changed()
        store, audit = self.shared.store, self.shared.audit
        if lost is None or store is None:
            return
        note = records_lost_note(*lost)
        store.annotate(approval.id, RECORDS_LOST, note)
        log.error("gitvow: approval %s: %s", approval.id, note)
        if audit is not None:
            audit_approval(audit, approval, "staged", reason=RECORDS_LOST, note=note)

    def done(self) -> None:
        self.sender.stop()

    async def request(self, flow: http.HTTPFlow) -> None:
        staged = flow.metadata.pop(STAGED_KEY, None)
        if staged is not None:
            try:
                # The store is reached off the event loop: a hung store holds up this request
                # (within the store's time bound), never the others.
                new = await asyncio.to_thread(self._stage, flow, staged)
                if new is not None:
                    self.sender.fetch_context(new)  # off the request path: the agent is answered now
            except StoreUnavailable as exc:  # not the agent's fault: nothing staged, come back later
                log.warning("gitvow: could not stage %s %s: %s", flow.request.method, staged.request.path, exc)
                flow.response = plain_refusal(
                    503, f"gitvow refused {flow.request.method} {staged.request.path}: the state store cannot be "
                    f"reached, so the request could not be staged for a human; send it again in a few seconds. "
                    f"reason={STATE_UNAVAILABLE}", STATE_UNAVAILABLE)
                flow.response.headers["Retry-After"] = str(UNAVAILABLE_RETRY)
            except Exception as exc:  # the refusal already set stays; say why it was not staged
                log.error("gitvow: could not stage %s %s: %s: %s", flow.request.method, staged.request.path,
                          type(exc).__name__, exc)
                flow.response = plain_refusal(403, f"gitvow refused the request: internal error "
                                              f"({type(exc).__name__}). reason={INTERNAL_ERROR}", INTERNAL_ERROR)
        elif APPROVAL_KEY in flow.metadata and flow.response is not None:
            # whatever answered an approved request here is gitvow, not the forge: not sent
            flow.metadata.setdefault(REFUSED_KEY, flow.response.get_text(strict=False) or "refused")

    # Plain functions: the chain creates no coroutine per request for these hooks; the sender
    # records a replayed approval's answer in a task of its own (the store is reached off the loop).
    def response(self, flow: http.HTTPFlow) -> None:
        if APPROVAL_KEY in flow.metadata:
            self.sender.answered(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        if APPROVAL_KEY in flow.metadata:
            self.sender.answered(flow)

    def _stage(self, flow: http.HTTPFlow, staged: StagedRefusal) -> approvals.Approval | None:
        """Stage the refused request (or find it staged already) and answer with its state;
        the approval staged anew (whose forge context is to be fetched), if any. Runs in a
        worker thread."""
        store, audit = self.shared.store, self.shared.audit
        if store is None:
            raise RuntimeError("internal error: store unset")
        decision, request = staged.decision, staged.request
        fresh = candidate(flow, staged, time.time())
        capped = self._over_cap(fresh, staged)
        if capped is not None:
            self._throttle(flow, staged, *capped)
            return None
        approval = store.stage(fresh, fresh.created)
        new: approvals.Approval | None = None
        if approval.id == fresh.id:
            if audit is not None:
                audit_approval(audit, approval, "staged", reason=decision.reason)
            self._mark_if_records_lost(approval)
            new = approval
        headers = {denial.APPROVAL_HEADER: approval.id}
        flow.metadata.pop(AUDIT_KEY, None)
        if approval.status == approvals.SENT and approval.response_status is not None:
            # The agent's identical retry after the send: the recorded answer, never a second send.
            flow.response = http.Response.make(
                approval.response_status or 200, approval.response_body,
                {"Content-Type": approval.response_type or "application/octet-stream", **headers},
            )
            if audit is not None:
                audit_approval(audit, approval, "answered")
            return new
        verdict = self._verdict(approval, staged)
        runtime = staged.runtime
        if decision.classification is None or verdict is None:
            raise RuntimeError("internal error: decision.classification or verdict unset")
        adapter = runtime.engine.adapters.get(decision.adapter or "")
        message = runtime.engine.message(verdict, decision.classification, adapter, f"{request.method} {request.path}",
                                         approval=approval.id)
        code = verdict.code or INTERNAL_ERROR
        headers[denial.REASON_HEADER] = code
        flow.response = shaped_refusal(runtime, request, decision.adapter, 403, message, code, headers)
        classification = decision.classification
        flow.metadata[AUDIT_KEY] = Audited(
            request.method, f"{request.host}:{request.port}", request.path, staged.identity.name, "deny", code,
            decision.stage, staged.took, operations=classification.operations, repo=classification.repo,
            adapter=decision.adapter)
        return new

    def _over_cap(self, fresh: approvals.Approval, staged: StagedRefusal) -> tuple[int, int, float] | None:
        """``(waiting, cap, retry after)`` when staging ``fresh`` would put its agent over
        ``[approvals] max_pending`` (or, without one, its ``[budget]`` writes per window); None
        when it may be staged or is staged already (the same request again is never capped).
        Counted over pending, approved and sending approvals; with several replicas the count
        is read, not reserved, so two at once may each take the last place."""
        settings = staged.runtime.policy.section(ProxyPolicy)
        cap = settings.approvals.max_pending
        if cap is None:
            cap = settings.budget.limits_for(fresh.agent)[0]
        store = self.shared.store
        if cap is None or store is None:
            return None
        live = [a for a in store.approvals(WAITING, limit=10_000) if a.agent == fresh.agent]
        if any(a.fingerprint == fresh.fingerprint for a in live):
            return None
        live = [a for a in live if a.status != approvals.PENDING or a.expires > fresh.created]
        if len(live) < cap:
            return None
        soonest = min((a.expires for a in live if a.status == approvals.PENDING), default=fresh.created + 60)
        return len(live), cap, max(1.0, soonest - fresh.created)

    def _throttle(self, flow: http.HTTPFlow, staged: StagedRefusal, waiting: int, cap: int, retry: float) -> None:
        """The throttling answer (429, ``Retry-After``), as a write budget gives it."""
        decision, request, runtime = staged.decision, staged.request, staged.runtime
        classification = decision.classification
        if classification is None:
            raise RuntimeError("internal error: classification unset")
        what = ", ".join(classification.operations)
        message = (f"gitvow refused {what} ({request.method} {request.path}): agent {staged.identity.name} has "
                   f"{waiting} approvals waiting for a human, its cap is {cap}; wait until a human decides them. "
                   f"reason={APPROVAL_CAP}")
        headers = {denial.REASON_HEADER: APPROVAL_CAP, "Retry-After": str(int(retry) + 1)}
        flow.response = shaped_refusal(runtime, request, decision.adapter, 429, message, APPROVAL_CAP, headers)
        flow.metadata[AUDIT_KEY] = Audited(
            request.method, f"{request.host}:{request.port}", request.path, staged.identity.name, "throttle",
            APPROVAL_CAP, "approval", staged.took, operations=classification.operations, repo=classification.repo,
            adapter=decision.adapter)

    def _verdict(self, approval: approvals.Approval, staged: StagedRefusal) -> Verdict | None:
        """What the agent is told about a staged approval that was not sent."""
        verdict = staged.decision.verdict
        if verdict is None:
            return None
        if approval.status == approvals.REJECTED:
            why = f"approval {approval.id} was rejected by {approval.decided_by}" + (
                f": {approval.reason}" if approval.reason else "")
            return Verdict.deny(APPROVAL_REJECTED, why, operation=verdict.operation)
        sending = _sending_verdict(approval, staged.runtime.policy.section(ProxyPolicy).approvals.stuck_after,
                                   verdict.operation)
        if sending is not None:
            return sending
        if approval.status == approvals.EXPIRED:
            audit = self.shared.audit
            if audit is not None:
                audit_approval(audit, approval, "expired", reason=APPROVAL_EXPIRED)
            return Verdict.deny(APPROVAL_EXPIRED, f"approval {approval.id} expired before a human answered it",
                                operation=verdict.operation)
        return verdict


def _sending_verdict(approval: approvals.Approval, stuck_after: float, operation: str | None) -> Verdict | None:
    """The truth about an approved request the agent sends again: being sent (wait for it),
    stuck with its outcome unknown (a human resolves it), or sent as an operator said (its
    answer was never recorded, so it cannot be replayed). None for any other status."""
    now = time.time()
    if approval.status == approvals.SENDING and is_stuck(approval, now, stuck_after):
        return Verdict.deny(APPROVAL_STUCK, stuck_note(approval, now), operation=operation)
    if approval.status in (approvals.APPROVED, approvals.SENDING):
        return Verdict.deny(APPROVAL_SENDING, f"approval {approval.id} was approved and is being sent now; "
                            f"`gitvow approvals wait {approval.id}` prints the forge's answer", operation=operation)
    if approval.status == approvals.SENT:
        return Verdict.deny(APPROVAL_RESOLVED_SENT, f"approval {approval.id} was sent ({approval.reason}); the "
                            "forge's answer was not recorded, so look on the forge; it is never sent again",
                            operation=operation)
    return None


__all__ = ["APPROVAL_CAP", "ApprovalRelay"]
