"""gitvow-gate's hook implementations: the policy-file sections the agent gate reads."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """gitvow 0.42's keys: ``bash_deny``, ``bash_confirm``, ``path_confirm``, ``mcp_allow``, ``mcp_deny``, ``providers``, ``llm_classifier``."""
    from gitvow_gate.schema import IGNORED_KEYS, GateSections, notes  # pydantic: only when a policy is validated

    register(PolicySection(GateSections, "gitvow-gate", ignored=IGNORED_KEYS, notes=notes))
