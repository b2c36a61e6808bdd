"""gitvow-sandbox's hook implementations: the ``[sandbox]`` section of the policy file."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """``[sandbox]``."""
    from gitvow_sandbox.settings import SandboxPolicy  # pydantic: only when a policy is validated

    register(PolicySection(SandboxPolicy, "gitvow-sandbox"))
