"""What the proxy's addons leave on a flow for each other (``flow.metadata`` keys).

An addon that decides something about a request says so here rather than by calling another
addon: the identity addon leaves who is asking, the enforcement addon what it decided (and
the secrets it injected), the approval relay what it staged; the audit, record and scrub
addons read these. A value an addon cannot find is treated as a refusal by whoever needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitvow.pipeline import Decision
from gitvow.request import Request
from gitvow_proxy.identity import Identity
from gitvow_proxy.runtime import Runtime

#: ``(Identity, Runtime)``: the caller, proven under that policy (identity addon).
IDENTITY_KEY = "gitvow.identity"
#: ``(approval id, agent)``: a replayed approval the sender sends; no agent sent it.
APPROVAL_KEY = "gitvow.approval"
#: The denial line of a replayed approval that gitvow (not the forge) answered.
REFUSED_KEY = "gitvow.refused"
#: The injected secrets (bytes) to scrub from the response (enforcement addon).
SECRETS_KEY = "gitvow.secrets"
#: ``(adapter, time.time())`` when a request was forwarded, for the upstream metric.
SENT_KEY = "gitvow.sent"
#: The :class:`Audited` decision about this flow, written by the audit addon.
AUDIT_KEY = "gitvow.audit"
#: A :class:`StagedRefusal` for the approval relay (enforcement addon).
STAGED_KEY = "gitvow.staged"


@dataclass(slots=True)
class Audited:
    """One decision as the audit line (and a recording's metadata) states it."""

    method: str
    host: str  # host:port
    path: str
    agent: str | None
    verdict: str
    reason: str | None
    stage: str
    took: float = 0.0
    operations: tuple[str, ...] = ()
    repo: str | None = None
    adapter: str | None = None
    note: str | None = None
    #: The policy that decided, when the flow may be recorded with this decision.
    runtime: Runtime | None = None
    #: Names of the headers the adapter injected (dropped from a recording).
    injected: tuple[str, ...] = field(default=())
    #: Set by the audit addon once the line is written, so a later hook never writes it twice.
    written: bool = False

    def recording_info(self) -> dict[str, object]:
        """What a recorded flow's metadata says about its decision."""
        return {"agent": self.agent, "verdict": self.verdict, "reason": self.reason, "stage": self.stage,
                "operations": list(self.operations), "repo": self.repo}


@dataclass(frozen=True, slots=True)
class StagedRefusal:
    """A refusal the approval relay may stage: what it needs to stage and answer it."""

    runtime: Runtime
    request: Request
    identity: Identity
    decision: Decision
    took: float


__all__ = ["APPROVAL_KEY", "AUDIT_KEY", "IDENTITY_KEY", "REFUSED_KEY", "SECRETS_KEY", "SENT_KEY", "STAGED_KEY",
           "Audited", "StagedRefusal"]
