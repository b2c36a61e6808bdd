"""Stuck merges re-checked with the forge: the proxy asks, and resolves what the forge can tell.

An approval stuck in ``sending`` (:mod:`gitvow_proxy.stuck`) has an unknown outcome. For a
merge the forge knows it: the pull (merge) request is merged or it is not. So the proxy (which
alone holds the forge credential) asks the forge about each stuck merge, at most once per
:data:`RECHECK_EVERY` seconds, and resolves it as an operator would: merged → ``sent`` (the
agent's retry is told so, never sent again), not merged → ``failed`` (the agent's next
identical request is staged anew for a human; nothing is sent by itself). Each is an audit line
``resolved_sent`` / ``resolved_failed`` by :data:`BY`. A forge that cannot be asked leaves the
approval stuck, to be asked again later or resolved by an operator. Whether a comment, an issue
or a pull request was created is not knowable this way (an identical one may exist for other
reasons): those stay with an operator (``gitvow approvals resolve``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from gitvow.approval_context import ApprovalContext
from gitvow_proxy.approval_context import ForgeAccess, context_now, staged_request
from gitvow_proxy.approvals import Approval
from gitvow_proxy.audit import audit_approval
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared
from gitvow_proxy.store.interface import ApprovalError
from gitvow_proxy.stuck import resolve, stuck

log = logging.getLogger("gitvow_proxy")

#: Who resolved an approval the forge could tell about (the audit line's ``by``).
BY = "gitvow (asked the forge)"
#: Seconds between two questions to the forge about one stuck approval.
RECHECK_EVERY = 30.0
#: Seconds between two looks for stuck approvals (each look is one store read).
LOOK_EVERY = 5.0

Access = Callable[[Approval], ForgeAccess | None]


def merged(found: ApprovalContext | None) -> bool | None:
    """Whether the forge says the merge happened (None: it did not say)."""
    return found.pull.merged if found is not None and found.pull is not None else None


class StuckRecheck:
    """Asks the forge about stuck merges, off the event loop; resolves what it can tell."""

    def __init__(self, shared: Shared, access: Access) -> None:
        self.shared = shared
        self.access = access
        self._asked: dict[str, float] = {}
        self._looked = float("-inf")

    async def run(self) -> None:
        """One look (called every sender round; looks at most every LOOK_EVERY seconds)."""
        store, runtime = self.shared.store, self.shared.runtime
        now = time.monotonic()
        if store is None or runtime is None or now - self._looked < LOOK_EVERY:
            return
        self._looked = now
        bound = runtime.policy.section(ProxyPolicy).approvals.stuck_after
        found = await asyncio.to_thread(stuck, store, time.time(), bound)
        self._asked = {k: v for k, v in self._asked.items() if any(a.id == k for a in found)}
        for approval in found:
            if "pr.merge" not in approval.operations or now - self._asked.get(approval.id, float("-inf")) < RECHECK_EVERY:
                continue
            self._asked[approval.id] = now
            await self._ask(approval, bound)

    async def _ask(self, approval: Approval, bound: float) -> None:
        access = self.access(approval)
        if access is None:
            return
        try:
            request = staged_request(approval.method, approval.url, approval.headers, approval.body)
            found = await asyncio.to_thread(context_now, approval.operations, request, access)
        except Exception as exc:  # the forge cannot say now: it stays stuck, asked again later
            log.warning("gitvow: stuck approval %s: the forge could not be asked: %s", approval.id, exc)
            return
        outcome = merged(found)
        if outcome is None or found is None:
            return
        await asyncio.to_thread(self._resolve, approval, outcome, found, bound)

    def _resolve(self, approval: Approval, outcome: bool, found: ApprovalContext, bound: float) -> None:
        """Worker thread: resolve as the forge said, with an audit line (once, whichever replica)."""
        store, audit = self.shared.store, self.shared.audit
        if store is None:
            return
        pull = found.pull
        what = f"pull request #{pull.number}" if pull is not None and pull.number is not None else "the pull request"
        state = f" (it is {pull.state})" if pull is not None and pull.state and not outcome else ""
        note = f"the forge says {what} is {'merged' if outcome else 'not merged'}{state}"
        try:
            done = resolve(store, approval.id, sent=outcome, by=BY, now=time.time(), bound=bound, note=note)
        except ApprovalError:  # resolved meanwhile (another replica, an operator)
            return
        if audit is not None:
            audit_approval(audit, done, "resolved_sent" if outcome else "resolved_failed", by=BY, note=done.reason)
        log.warning("gitvow: stuck approval %s resolved as %s: %s", approval.id, "sent" if outcome else "not sent",
                    note)


__all__ = ["BY", "LOOK_EVERY", "RECHECK_EVERY", "StuckRecheck", "merged"]
