"""Entry point of the ``gitvow`` command.

The core answers the commands that need nothing else (:data:`~gitvow.cli.command.CORE_COMMANDS`);
every other command is added by a plugin through the ``register_commands`` hook (the
enforcement points add theirs that way), so the core names none of them. A command nothing
registers, but that one of this project's own distributions would add, says in one line what
to install (:mod:`gitvow.first_party`).

Subcommand modules are imported only when used. ``gitvow hook`` runs on every tool call of
every agent, and discovering plugins costs more than the hook may take: a command that
declares itself ``fast`` is found through a small cached index (:mod:`gitvow.cli.command_index`)
and its ``fast(argv)`` answers before argparse and before any discovery.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitvow import __version__
from gitvow.cli.command import CORE_COMMANDS, Command

if TYPE_CHECKING:
    import argparse
    from typing import Any, Protocol

    class Subcommand(Protocol):
        def add_parser(self, parser: argparse.ArgumentParser) -> None: ...

        def run(self, args: argparse.Namespace) -> int: ...


CORE = {command.name: command for command in CORE_COMMANDS}


class MissingDistribution(Exception):
    """A command of one of this project's distributions, which is not installed."""

    def __init__(self, command: str, distribution: str) -> None:
        from gitvow.first_party import install_hint

        super().__init__(f"`gitvow {command}` is part of {distribution}, which is not installed: {install_hint(distribution)}")


class Commands:
    """The commands this installation offers: the core's, then those plugins registered."""

    def __init__(self, with_plugins: bool) -> None:
        self.table: dict[str, Command] = dict(CORE)
        self.distributions: dict[str, str] = {}
        if with_plugins:
            from gitvow.plugins import installed

            plugins = installed()
            for name, command in plugins.commands.items():
                self.table[name] = command
                self.distributions[name] = plugins.distribution_of(plugins.command_plugin[name]) or "a plugin"

    def load(self, name: str) -> Subcommand:
        command = self.table[name]
        try:
            module: Subcommand = _import(command.module)
        except ModuleNotFoundError as exc:
            if exc.name == command.module.partition(".")[0]:
                raise MissingDistribution(name, self.distributions.get(name, "a plugin")) from None
            raise
        return module


def _import(name: str) -> Any:
    """``importlib.import_module`` for an absolute name, without importing importlib (and warnings)."""
    __import__(name)
    return sys.modules[name]


def _missing(name: str) -> MissingDistribution | None:
    from gitvow.first_party import owner_of_command

    distribution = owner_of_command(name)
    return MissingDistribution(name, distribution) if distribution is not None else None


def build_parser(commands: Commands, only: str | None = None) -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="gitvow", description="One policy for what AI coding agents may do to forges.")
    parser.add_argument("--version", action="version", version=f"gitvow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in commands.table.items():
        help_text = command.help
        if name in commands.distributions:
            help_text += f" [{commands.distributions[name]}]"
        child = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            commands.load(name).add_parser(child)
        elif only is None:
            # listed in the help either way; running it says what to install
            try:  # noqa: SIM105 - contextlib costs the agent hook start-up time
                commands.load(name).add_parser(child)
            except MissingDistribution:
                pass
    return parser


def _fast(name: str, argv: list[str]) -> int | None:
    """The answer of a fast command the index names, or None (then the slow path decides)."""
    from gitvow.cli import command_index

    module_name = command_index.lookup(name)
    if module_name is None:
        return None
    try:
        module = _import(module_name)
    except ModuleNotFoundError:
        return None  # uninstalled since the index was written: discovery says what to do
    fast = getattr(module, "fast", None)
    return fast(argv) if callable(fast) else None


def _discovered_fast(commands: Commands, name: str, argv: list[str]) -> int | None:
    """After discovery: remember the fast commands, then try ``name``'s fast path."""
    command = commands.table.get(name)
    if command is None or not command.fast:
        return None
    from gitvow.cli import command_index

    command_index.remember(commands.table.values())
    fast = getattr(commands.load(name), "fast", None)
    return fast(argv) if callable(fast) else None


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else ""
    named = bool(first) and not first.startswith("-")
    try:
        if named and first not in CORE:
            code = _fast(first, args_list[1:])
            if code is not None:
                return code
        commands = Commands(with_plugins=first not in CORE)
        if named and first not in commands.table:
            missing = _missing(first)
            if missing is not None:
                raise missing
        elif named and (code := _discovered_fast(commands, first, args_list[1:])) is not None:
            return code
        parser = build_parser(commands, first if first in commands.table else None)
    except MissingDistribution as exc:
        print(f"gitvow: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return commands.load(args.command).run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
