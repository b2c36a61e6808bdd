"""gitvow-proxy's hook implementations: the policy-file sections the proxy reads."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """``[proxy]``, ``[credentials.*]``, ``[internal]``, ``[run_state]``, ``[write_surface]``, ``[budget]``, ``[canary]``, ``[issue_shape]``, ``[egress]``, ``[audit]``, ``[approvals]``, ``[admin]``."""
    from gitvow_proxy.settings import ProxyPolicy, proxy_problems  # pydantic: only when a policy is validated

    register(PolicySection(ProxyPolicy, "gitvow-proxy", check=proxy_problems))
