"""Entry point of the ``gitvow`` command.

Subcommands live in their own modules and are imported only when used: ``gitvow hook``
runs on every tool call of every agent, so it must not pay for importing the proxy.

The core answers the commands that need nothing else; the enforcement points' commands live
in their distributions (``gitvow-proxy``, ``gitvow-gate``). The table names them all, so
``gitvow --help`` shows the whole tool and a command whose distribution is not installed
says, in one line, what to install.
"""

from __future__ import annotations

import contextlib
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


CORE = "gitvow"
PROXY = "gitvow-proxy"
GATE = "gitvow-gate"
SANDBOX = "gitvow-sandbox"

#: subcommand → (module, one-line help, distribution). Modules define ``add_parser(parser)``
#: and ``run(args) -> int``.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "ops": ("gitvow.cli.ops", "list the operation vocabulary and each operation's default rule", CORE),
    "plugins": ("gitvow.cli.plugins", "list discovered plugins, their adapters and hosts", CORE),
    "policy": ("gitvow.cli.policy", "check a policy file or print its JSON Schema", CORE),
    "explain": ("gitvow.cli.explain", "classify one request offline and show the verdict", CORE),
    "proxy": ("gitvow_proxy.cli.proxy", "run the proxy: the whole pipeline on the agents' traffic", PROXY),
    "env": ("gitvow_proxy.cli.env", "print an agent's shell environment for the proxy", PROXY),
    "replay": ("gitvow_proxy.cli.replay", "re-decide recorded traffic under a new policy; list what changes", PROXY),
    "approvals": ("gitvow_proxy.cli.approvals", "list, show, approve, reject or wait for requests the proxy staged", PROXY),
    "pause": ("gitvow_proxy.cli.pause", "refuse agent writes to a repository from the next request on", PROXY),
    "resume": ("gitvow_proxy.cli.resume", "undo `gitvow pause` for a repository", PROXY),
    "status": ("gitvow_proxy.cli.status", "agents' modes and budgets, paused repositories, approvals, refusals", PROXY),
    "run": ("gitvow_sandbox.cli.run", "run a command in a sandbox whose only network is the proxy", SANDBOX),
    "hook": ("gitvow_gate.cli.hook", "run as an agent's pre-tool-use hook (the agent's JSON on stdin)", GATE),
    "check": ("gitvow_gate.cli.check", "what the agent gate decides for a command, a file edit or an MCP tool", GATE),
    "ask": ("gitvow_gate.cli.ask", "ask the configured providers one question about an edit", GATE),
    "install": ("gitvow_gate.cli.install", "write an agent's hook configuration (per user or per repository)", GATE),
    "uninstall": ("gitvow_gate.cli.uninstall", "remove what install wrote", GATE),
}


class MissingDistribution(Exception):
    """A command of an enforcement point whose distribution is not installed."""

    def __init__(self, command: str, distribution: str) -> None:
        from gitvow.policy.sections import install_hint

        super().__init__(f"`gitvow {command}` is part of {distribution}, which is not installed: {install_hint(distribution)}")


def _load(name: str) -> Subcommand:
    module_name, _help, distribution = COMMANDS[name]
    try:
        module: Subcommand = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name.partition(".")[0]:
            raise MissingDistribution(name, distribution) from None
        raise
    return module


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="gitvow", description="One policy for what AI coding agents may do to forges.")
    parser.add_argument("--version", action="version", version=f"gitvow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text, distribution) in COMMANDS.items():
        if distribution != CORE:
            help_text += f" [{distribution}]"
        child = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            _load(name).add_parser(child)
        elif only is None:
            # listed in the help with its distribution either way; running it says what to install
            with contextlib.suppress(MissingDistribution):
                _load(name).add_parser(child)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    try:
        if first == "hook":  # every tool call of every agent: skip argparse when the line is plain
            code = _fast_hook(args_list[1:])
            if code is not None:
                return code
        parser = build_parser(first if first in COMMANDS else None)
    except MissingDistribution as exc:
        print(f"gitvow: error: {exc}", file=sys.stderr)
        return 2
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


def _fast_hook(args: list[str]) -> int | None:
    try:
        from gitvow_gate.cli.hook import fast
    except ModuleNotFoundError as exc:
        if exc.name == "gitvow_gate":
            raise MissingDistribution("hook", GATE) from None
        raise
    return fast(args)


if __name__ == "__main__":
    sys.exit(main())
