"""``gitvow hook --agent NAME EVENT``: the agent's hook command (JSON on stdin)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

AGENT_NAMES = ("claude", "codex", "cursor", "gemini", "copilot")


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default=None, help="claude, codex, cursor, gemini or copilot (default: claude)")
    parser.add_argument("event", help="the agent's hook event (PreToolUse, BeforeTool, preToolUse, beforeShellExecution…)")


def fast(argv: list[str]) -> int | None:
    """``hook [--agent NAME] EVENT`` without argparse (the hot path); None for anything else."""
    agent: str | None = None
    rest = list(argv)
    if rest and rest[0].startswith("--agent="):
        agent = rest.pop(0).partition("=")[2]
    elif len(rest) >= 2 and rest[0] == "--agent":
        agent = rest[1]
        rest = rest[2:]
    if len(rest) != 1 or rest[0].startswith("-") or agent == "":
        return None
    # A hook process lives for one tool call and exits: the cyclic garbage collector, which
    # the imports ahead would set off several times, only costs it time (it is back on for a
    # caller that serves hooks in-process).
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return serve(agent, rest[0])
    finally:
        if collecting:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    return serve(args.agent, args.event)


def serve(agent: str | None, event: str) -> int:
    from gitvow_gate.invocation import run as run_hook

    # --agent names the hook protocol; $GITVOW_AGENT is the policy's name for the agent
    # (gitvow_gate.invocation.policy_agent) and stands in for --agent only when it names a protocol
    named = os.environ.get("GITVOW_AGENT", "")
    agent = agent or (named if named in AGENT_NAMES else "claude")
    try:
        stdin = sys.stdin.read()
    except (OSError, UnicodeDecodeError):
        stdin = ""
    answer = run_hook(agent, event, stdin)
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr + "\n")
    return answer.code
