"""``gitvow hook --agent NAME EVENT``: the agent's hook, as a ``gitvow`` subcommand (JSON on stdin).

``gitvow install`` writes ``gitvow-hook`` into the agent's configuration, the same client
(:mod:`gitvow_gate.hook_client`) without the ``gitvow`` command's plugin discovery; this
subcommand stays for hooks written by earlier releases and for trying the hook by hand.
"""

from __future__ import annotations

import argparse

from gitvow_gate import hook_client


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default=None, help="claude, codex, cursor, gemini or copilot (default: claude)")
    parser.add_argument("event", help="the agent's hook event (PreToolUse, BeforeTool, preToolUse, beforeShellExecution…)")


def run(args: argparse.Namespace) -> int:
    return hook_client.serve(args.agent, args.event)
