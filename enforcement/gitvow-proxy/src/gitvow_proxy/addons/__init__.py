"""The proxy as mitmproxy addons, one concern each, sharing one :class:`~gitvow_proxy.shared.Shared`.

In the order mitmproxy calls them (the order is the contract: each reads what the ones
before it left on the flow, :mod:`gitvow_proxy.flow_metadata`):

1. :class:`PolicyReload` loads the policy, the store and the audit log, and keeps them current;
2. :class:`ProxyIdentity` proves the caller (407 otherwise);
   :class:`EgressControl` refuses tunnels to hosts outside ``[egress] allow`` or with
   non-public addresses (:mod:`gitvow_proxy.addons.egress`);
3. :class:`~gitvow_proxy.mcp.addons.McpSessions` refuses an MCP session to any agent but the
   one that opened it, and opens one of the proxy's own for an approved MCP call;
4. :class:`PolicyEnforcement` refuses what cannot be inspected, asks the engine and applies
   the decision (credential injection, the refusal in the adapter's shape);
5. :class:`~gitvow_proxy.mcp.addons.McpStaging` gives an MCP call about to be staged ids
   derived from the call, so the agent's retry finds its approval;
   :class:`GitAdvertisement` adds ``no-thin`` to git's receive-pack advertisements and
   remembers the default branch an upload-pack one names;
6. :class:`ResponseStreaming` passes a model's event stream on as it comes, event by event,
   scrubbed (:mod:`gitvow_proxy.addons.response_streaming`);
   :class:`ScrubAndRecord` scrubs injected secrets from responses and writes recordings;
7. :class:`ApprovalRelay` stages what the ``approval`` relay refused and sends approved
   requests once;
8. :class:`~gitvow_proxy.mcp.addons.McpAnswers` answers MCP clients as they read: refusals
   as tool results, recorded answers under the retry's ids, event streams one scrubbed event
   at a time, filtered ``tools/list`` answers;
9. :class:`DecisionAudit` writes one audit line and one metrics count per decision;
10. :class:`AdminListener` serves the approval desk and ``/metrics``.

No addon imports another; a decision one of them cannot find on the flow is a refusal.
mitmproxy holds them as one addon, :class:`~gitvow_proxy.addons.chain.AddonChain`
(:func:`gitvow_addon`), which calls each in this order and fails closed when one raises.
"""

from __future__ import annotations

from gitvow_proxy.addons.admin_listener import AdminListener
from gitvow_proxy.addons.approval_relay import ApprovalRelay
from gitvow_proxy.addons.chain import AddonChain
from gitvow_proxy.addons.decision_audit import DecisionAudit
from gitvow_proxy.addons.egress import EgressControl
from gitvow_proxy.addons.enforcement import PolicyEnforcement
from gitvow_proxy.addons.git_advertisement import GitAdvertisement
from gitvow_proxy.addons.graceful_stop import GracefulStop
from gitvow_proxy.addons.policy_reload import PolicyReload
from gitvow_proxy.addons.proxy_identity import ProxyIdentity
from gitvow_proxy.addons.response_streaming import ResponseStreaming
from gitvow_proxy.addons.scrub_and_record import ScrubAndRecord
from gitvow_proxy.mcp.addons import McpAnswers, McpSessions, McpStaging
from gitvow_proxy.shared import Shared


def proxy_addons(shared: Shared | None = None) -> list[object]:
    """gitvow's addons in their order, sharing ``shared`` (a new one by default)."""
    shared = shared if shared is not None else Shared()
    sessions = McpSessions(shared)
    return [
        PolicyReload(shared),
        GracefulStop(shared),
        ProxyIdentity(shared),
        EgressControl(shared),
        sessions,
        PolicyEnforcement(shared),
        McpStaging(shared),
        GitAdvertisement(shared),
        ResponseStreaming(shared),
        ScrubAndRecord(shared),
        ApprovalRelay(shared),
        McpAnswers(shared, sessions.bindings),
        DecisionAudit(shared),
        AdminListener(shared),
    ]


def gitvow_addon(shared: Shared | None = None) -> AddonChain:
    """The one addon mitmproxy holds: :func:`proxy_addons` in a fail-closed chain."""
    return AddonChain(proxy_addons(shared))


__all__ = [
    "AddonChain", "AdminListener", "ApprovalRelay", "DecisionAudit", "EgressControl", "GitAdvertisement", "GracefulStop",
    "PolicyEnforcement", "PolicyReload", "ProxyIdentity", "ResponseStreaming", "ScrubAndRecord", "gitvow_addon", "proxy_addons",
]
