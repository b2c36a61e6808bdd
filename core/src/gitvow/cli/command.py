"""A subcommand of ``gitvow``, as the core and plugins (``register_commands``) declare it.

A command is named by the module that implements it, so declaring one imports nothing:
the module is imported only when its command runs (``gitvow policy`` must not pay for the
proxy). The module defines ``add_parser(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    """``gitvow NAME``: its one-line help and the module that implements it."""

    name: str
    module: str
    help: str


#: The core's own commands: those that need nothing but the core.
CORE_COMMANDS: tuple[Command, ...] = (
    Command("ops", "gitvow.cli.ops", "list the operation vocabulary and each operation's default rule"),
    Command("plugins", "gitvow.cli.plugins", "list discovered plugins, their adapters, commands and hosts"),
    Command("policy", "gitvow.cli.policy", "check a policy file or print its JSON Schema"),
    Command("explain", "gitvow.cli.explain", "classify one request offline and show the verdict"),
)


__all__ = ["CORE_COMMANDS", "Command"]
