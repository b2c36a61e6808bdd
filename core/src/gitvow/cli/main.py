"""Entry point of the ``gitvow`` command.

Subcommands live in their own modules and are imported only when used: ``gitvow hook``
runs on every tool call of every agent, so it must not pay for importing the proxy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from gitvow import __version__

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook start-up time
if TYPE_CHECKING:
    import argparse
    from typing import Protocol

    class Subcommand(Protocol):
        def add_parser(self, parser: argparse.ArgumentParser) -> None: ...

        def run(self, args: argparse.Namespace) -> int: ...


#: subcommand → (module, one-line help). Modules define ``add_parser(parser)`` and ``run(args) -> int``.
COMMANDS: dict[str, tuple[str, str]] = {
    "ops": ("gitvow.cli.ops", "list the operation vocabulary and each operation's default rule"),
    "plugins": ("gitvow.cli.plugins", "list discovered plugins, their adapters and hosts"),
    "policy": ("gitvow.cli.policy", "check a policy file or print its JSON Schema"),
    "explain": ("gitvow.cli.explain", "classify one request offline and show the verdict"),
    "hook": ("gitvow.cli.hook", "run as an agent's pre-tool-use hook (the agent's JSON on stdin)"),
    "check": ("gitvow.cli.check", "what the agent gate decides for a command, a file edit or an MCP tool"),
    "ask": ("gitvow.cli.ask", "ask the configured providers one question (seed 000)"),
    "install": ("gitvow.cli.install", "write an agent's hook configuration (per user or per repository)"),
    "uninstall": ("gitvow.cli.uninstall", "remove what install wrote"),
}


def _load(name: str) -> Subcommand:
    module: Subcommand = importlib.import_module(COMMANDS[name][0])
    return module


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="gitvow", description="One policy for what AI coding agents may do to forges.")
    parser.add_argument("--version", action="version", version=f"gitvow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            _load(name).add_parser(child)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    if first == "hook":  # every tool call of every agent: skip argparse when the line is plain
        from gitvow.cli.hook import fast

        code = fast(args_list[1:])
        if code is not None:
            return code
    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _load(args.command).run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
