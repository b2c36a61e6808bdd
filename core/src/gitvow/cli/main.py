"""``gitvow``: argparse with one module per subcommand.

Each subcommand module has ``register(subparsers)``, which adds its parser and sets
``handler`` (a function of the parsed namespace returning the exit code). Modules are
imported only to register; heavy imports wait until a handler runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order ``gitvow --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "gitvow.cli.proxy",
    "gitvow.cli.env",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gitvow", description="One policy for what AI coding agents may do to forges.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return int(handler(args))


if __name__ == "__main__":
    sys.exit(main())
