"""``gitvow hook --agent NAME EVENT``: the agent's hook command (JSON on stdin)."""

from __future__ import annotations

import argparse
import os
import sys

AGENT_NAMES = ("claude", "codex", "cursor", "gemini", "copilot")


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default=None, help="claude, codex, cursor, gemini or copilot (default: $GITVOW_AGENT, else claude)")
    parser.add_argument("event", help="the agent's hook event (PreToolUse, BeforeTool, preToolUse, beforeShellExecution…)")


def run(args: argparse.Namespace) -> int:
    from gitvow.gate.hook import run as run_hook

    agent = args.agent or os.environ.get("GITVOW_AGENT") or "claude"
    try:
        stdin = sys.stdin.read()
    except (OSError, UnicodeDecodeError):
        stdin = ""
    answer = run_hook(agent, args.event, stdin)
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr + "\n")
    return answer.code
