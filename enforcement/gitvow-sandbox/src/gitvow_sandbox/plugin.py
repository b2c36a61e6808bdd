"""gitvow-sandbox's hook implementations: the ``[sandbox]`` section of the policy file and ``gitvow run``."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.cli.command import Command
from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """``[sandbox]``."""
    from gitvow_sandbox.settings import SandboxPolicy  # pydantic: only when a policy is validated

    register(PolicySection(SandboxPolicy, "gitvow-sandbox"))


@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``gitvow run``."""
    register(Command("run", "gitvow_sandbox.cli.run", "run a command in a sandbox whose only network is the proxy"))
