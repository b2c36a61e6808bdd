"""Entry point of the ``gitvow`` command.

The core answers the commands that need nothing else (:data:`~gitvow.cli.command.CORE_COMMANDS`);
every other command is added by a plugin through the ``register_commands`` hook (the
enforcement points add theirs that way), so the core names none of them. A command nothing
registers, but that one of this project's own distributions would add, says in one line what
to install (:mod:`gitvow.first_party`).

A subcommand's module is imported only when that command runs, so ``gitvow policy check``
never pays for the proxy. The agent's hook does not come through here: ``gitvow install``
writes ``gitvow-hook``, gitvow-gate's own small client of its gate server.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from gitvow import __version__
from gitvow.cli.command import CORE_COMMANDS, Command
from gitvow.first_party import install_hint, owner_of_command
from gitvow.plugins import installed


class Subcommand(Protocol):
    def add_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


CORE = {command.name: command for command in CORE_COMMANDS}


class MissingDistribution(Exception):
    """A command of one of this project's distributions, which is not installed."""

    def __init__(self, command: str, distribution: str) -> None:
        super().__init__(f"`gitvow {command}` is part of {distribution}, which is not installed: {install_hint(distribution)}")


class Commands:
    """The commands this installation offers: the core's, then those plugins registered."""

    def __init__(self, with_plugins: bool) -> None:
        self.table: dict[str, Command] = dict(CORE)
        self.distributions: dict[str, str] = {}
        if with_plugins:
            plugins = installed()
            for name, command in plugins.commands.items():
                self.table[name] = command
                self.distributions[name] = plugins.distribution_of(plugins.command_plugin[name]) or "a plugin"

    def load(self, name: str) -> Subcommand:
        command = self.table[name]
        try:
            module: Subcommand = importlib.import_module(command.module)
        except ModuleNotFoundError as exc:
            if exc.name == command.module.partition(".")[0]:
                raise MissingDistribution(name, self.distributions.get(name, "a plugin")) from None
            raise
        return module


def _missing(name: str) -> MissingDistribution | None:
    distribution = owner_of_command(name)
    return MissingDistribution(name, distribution) if distribution is not None else None


def build_parser(commands: Commands, only: str | None = None) -> argparse.ArgumentParser:
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
            try:  # noqa: SIM105 - the loop goes on to the next command
                commands.load(name).add_parser(child)
            except MissingDistribution:
                pass
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else ""
    named = bool(first) and not first.startswith("-")
    try:
        commands = Commands(with_plugins=first not in CORE)
        if named and first not in commands.table:
            missing = _missing(first)
            if missing is not None:
                raise missing
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
