"""Approvals stuck in ``sending``: a sender that died mid-send, shown and resolved by a human.

A proxy claims an approved approval (``approved → sending``) before it sends it, so a proxy
killed mid-send leaves it in ``sending``; nothing sends it again, because the forge may have
acted on it (a merge cannot be taken back). Such an approval is never left out of sight: one
in ``sending`` for longer than ``[approvals] stuck_after`` seconds (a live send gives up after
the sender's own timeout, well before) is *stuck*. It is listed by ``gitvow approvals list``,
counted by ``gitvow status``, the desk and ``gitvow_approvals_stuck`` in ``/metrics``, and the
agent's retry and ``gitvow approvals wait`` say that its outcome is unknown. A merge is
re-checked with the forge by the proxy (:mod:`gitvow_proxy.forge_recheck`); anything else an
operator looks up on the forge and resolves: ``gitvow approvals resolve ID --sent`` (it happened; the agent's
retry is told so and never sent again) or ``--failed`` (it did not; the agent's next identical
request is staged anew for a human).
"""

from __future__ import annotations

from gitvow_proxy.approvals import SENDING, Approval
from gitvow_proxy.store.interface import ApprovalError, Store

#: The reason code of an agent's retry while its approved request is being sent.
APPROVAL_SENDING = "approval_sending"
#: The reason code of an agent's retry of an approval stuck in ``sending`` (outcome unknown).
APPROVAL_STUCK = "approval_stuck"
#: The reason code of an agent's retry of an approval an operator resolved as sent: the
#: forge's answer was never recorded, so it cannot be replayed.
APPROVAL_RESOLVED_SENT = "approval_resolved_sent"
#: The note (:meth:`Store.annotate`) on an approval staged after the store lost its records.
RECORDS_LOST = "records_lost"
#: The start of an approval's ``reason`` once an operator resolved it.
RESOLVED = "resolved by "


def since(approval: Approval) -> float:
    """When the approval entered ``sending`` (its last change)."""
    return approval.updated or approval.decided_at or approval.created


def is_stuck(approval: Approval, now: float, bound: float) -> bool:
    """In ``sending`` for longer than ``bound`` seconds: its sender died or hung past its timeout."""
    return approval.status == SENDING and now - since(approval) > bound


def stuck(store: Store, now: float, bound: float) -> list[Approval]:
    """Every stuck approval, newest first."""
    return [a for a in store.approvals([SENDING], limit=10_000) if is_stuck(a, now, bound)]


def stuck_note(approval: Approval, now: float) -> str:
    """One line for a human and for the agent: what is known and what to do."""
    return (f"approval {approval.id} was approved and its send started {int(now - since(approval))} s ago, but the "
            "proxy sending it stopped before the forge's answer was recorded: whether the forge acted on it is "
            f"unknown, so it is never sent again by itself; an operator checks the forge and runs "
            f"`gitvow approvals resolve {approval.id} --sent` or `--failed`")


def resolve(store: Store, approval_id: str, *, sent: bool, by: str, now: float, bound: float,
            note: str | None = None) -> Approval:
    """Mark a stuck approval sent or failed, recording who said so (ApprovalError when it is
    not stuck: a live send records its own answer)."""
    found = store.approval(approval_id)
    if found is None:
        raise ApprovalError(f"no approval {approval_id!r}")
    if found.status != SENDING:
        raise ApprovalError(f"approval {found.id} is {found.status}, not stuck in sending")
    if not is_stuck(found, now, bound):
        raise ApprovalError(f"approval {found.id} is being sent (for {int(now - since(found))} s); it is stuck only "
                            f"after [approvals] stuck_after = {int(bound)} s")
    what = "sent" if sent else "not sent"
    reason = f"{RESOLVED}{by}: {what}" + (f" ({note})" if note else "")
    return store.finish(found.id, sent=sent, status=None, content_type=None, body=b"", now=now, reason=reason)


def records_lost_note(seen: float, now_epoch: float) -> str:
    """The warning kept on an approval staged after the shared store restarted empty."""
    return ("the state store lost its records (restarted empty between "
            f"{_utc(seen)} and {_utc(now_epoch)}): this same request may have been approved and sent "
            "before; check the forge before approving it")


def _utc(at: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


__all__ = [
    "APPROVAL_RESOLVED_SENT",
    "APPROVAL_SENDING",
    "APPROVAL_STUCK",
    "RECORDS_LOST",
    "RESOLVED",
    "is_stuck",
    "records_lost_note",
    "resolve",
    "since",
    "stuck",
    "stuck_note",
]
