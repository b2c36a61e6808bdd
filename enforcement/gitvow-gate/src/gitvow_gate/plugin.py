"""gitvow-gate's hook implementations: the policy-file sections the agent gate reads, and its commands."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.cli.command import Command
from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """gitvow 0.42's keys: ``bash_deny``, ``bash_confirm``, ``path_confirm``, ``mcp_allow``, ``mcp_deny``, ``providers``, ``llm_classifier``."""
    # Here, not at the top: every gitvow process (the proxy's included) imports this module when it
    # discovers plugins, and must not get the gate's pydantic models and engine with it; they load
    # when sections are asked for, to validate a policy (tests/packaging/test_install_sets.py).
    from gitvow_gate.gate_sections import IGNORED_KEYS, GateSections, notes
    from gitvow_gate.policy_tests import judge_tool_test

    register(PolicySection(GateSections, "gitvow-gate", ignored=IGNORED_KEYS, notes=notes, tool_tests=judge_tool_test))


@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``gitvow hook``, ``gitvow check``, ``gitvow ask``, ``gitvow install``, ``gitvow uninstall``."""
    register(Command("hook", "gitvow_gate.cli.hook",
                     "run as an agent's pre-tool-use hook (the agent's JSON on stdin; installs run gitvow-hook)"))
    register(Command("check", "gitvow_gate.cli.check",
                     "what the agent gate decides for a command, a file edit or an MCP tool"))
    register(Command("ask", "gitvow_gate.cli.ask",
                     "ask the configured providers one question about an edit"))
    register(Command("install", "gitvow_gate.cli.install",
                     "write an agent's hook configuration (per user or per repository)"))
    register(Command("uninstall", "gitvow_gate.cli.uninstall",
                     "remove what install wrote"))
