"""A subcommand of ``gitvow``, as the core and plugins (``register_commands``) declare it.

A command is named by the module that implements it, so declaring one imports nothing:
the module is imported only when its command runs (``gitvow hook`` must not pay for the
proxy). The module defines ``add_parser(parser)`` and ``run(args) -> int``; a command on an
agent's hot path may also define ``fast(argv) -> int | None``, tried before argparse
(``fast=True``), returning None for anything it does not handle.

Kept free of dataclasses and typing: the hook's start-up imports this.
"""

from __future__ import annotations


class Command:
    """``gitvow NAME``: its one-line help and the module that implements it."""

    __slots__ = ("fast", "help", "module", "name")

    def __init__(self, name: str, module: str, help: str, *, fast: bool = False) -> None:
        self.name = name
        self.module = module
        self.help = help
        self.fast = fast

    def __repr__(self) -> str:
        return f"Command({self.name!r}, {self.module!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Command) and (self.name, self.module, self.help, self.fast) == (
            other.name, other.module, other.help, other.fast)

    def __hash__(self) -> int:
        return hash((self.name, self.module))


#: The core's own commands: those that need nothing but the core.
CORE_COMMANDS: tuple[Command, ...] = (
    Command("ops", "gitvow.cli.ops", "list the operation vocabulary and each operation's default rule"),
    Command("plugins", "gitvow.cli.plugins", "list discovered plugins, their adapters, commands and hosts"),
    Command("policy", "gitvow.cli.policy", "check a policy file or print its JSON Schema"),
    Command("explain", "gitvow.cli.explain", "classify one request offline and show the verdict"),
)


__all__ = ["CORE_COMMANDS", "Command"]
