"""The proxy as mitmproxy addons, one concern each, sharing one :class:`~gitvow_proxy.shared.Shared`.

In the order mitmproxy calls them (the order is the contract: each reads what the ones
before it left on the flow, :mod:`gitvow_proxy.flow_metadata`):

1. :class:`PolicyReload` loads the policy, the store and the audit log, and keeps them current;
2. :class:`ProxyIdentity` proves the caller (407 otherwise);
   :class:`EgressControl` refuses tunnels to hosts outside ``[egress] allow`` or with
   non-public addresses (:mod:`gitvow_proxy.addons.egress`);
3. :class:`PolicyEnforcement` refuses what cannot be inspected, asks the engine and applies
   the decision (credential injection, the refusal in the adapter's shape);
4. :class:`ScrubAndRecord` scrubs injected secrets from responses and writes recordings;
5. :class:`ApprovalRelay` stages what the ``approval`` relay refused and sends approved
   requests once;
6. :class:`DecisionAudit` writes one audit line and one metrics count per decision;
7. :class:`AdminListener` serves the approval desk and ``/metrics``.

No addon imports another; a decision one of them cannot find on the flow is a refusal.
"""

from __future__ import annotations

from gitvow_proxy.addons.admin_listener import AdminListener
from gitvow_proxy.addons.approval_relay import ApprovalRelay
from gitvow_proxy.addons.decision_audit import DecisionAudit
from gitvow_proxy.addons.egress import EgressControl
from gitvow_proxy.addons.enforcement import PolicyEnforcement
from gitvow_proxy.addons.policy_reload import PolicyReload
from gitvow_proxy.addons.proxy_identity import ProxyIdentity
from gitvow_proxy.addons.scrub_and_record import ScrubAndRecord
from gitvow_proxy.shared import Shared


def proxy_addons(shared: Shared | None = None) -> list[object]:
    """gitvow's addons in their order, sharing ``shared`` (a new one by default)."""
    shared = shared if shared is not None else Shared()
    return [
        PolicyReload(shared),
        ProxyIdentity(shared),
        EgressControl(shared),
        PolicyEnforcement(shared),
        ScrubAndRecord(shared),
        ApprovalRelay(shared),
        DecisionAudit(shared),
        AdminListener(shared),
    ]


__all__ = [
    "AdminListener", "ApprovalRelay", "DecisionAudit", "EgressControl", "PolicyEnforcement", "PolicyReload",
    "ProxyIdentity", "ScrubAndRecord", "proxy_addons",
]
