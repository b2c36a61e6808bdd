"""``gitvow run --agent NAME -- COMMAND…``: the command in a sandbox whose only network is the proxy."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Linux only (bubblewrap and socat). Inside: loopback and the proxy only, the working tree "
                     "writable and the rest read-only, an empty home, none of the operator's credentials or the "
                     "proxy's files, and the environment `gitvow env` prints. Without --proxy, the proxy the "
                     "policy names is used if it is running, else one is started for the run and stopped after it.")
    parser.add_argument("--agent", required=True, help="agent name, as in [agents.NAME]")
    parser.add_argument("--policy", type=Path, default=os.environ.get("GITVOW_POLICY"),
                        help="policy file (default: $GITVOW_POLICY)")
    parser.add_argument("--proxy", metavar="URL", help="a running proxy, http://HOST:PORT (default: [proxy] listen_*)")
    parser.add_argument("--env-json", type=Path, metavar="FILE",
                        help="the agent's environment as `gitvow env --json` printed it where the proxy runs "
                             "(with --proxy, when gitvow-proxy is not installed here)")
    parser.add_argument("--allow-write", type=Path, action="append", default=[], metavar="PATH",
                        help="also writable inside, besides the working tree (repeatable)")
    parser.add_argument("--allow-read", type=Path, action="append", default=[], metavar="PATH",
                        help="also readable inside from your home, which is empty there (tools installed under it)")
    parser.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                        help="pass this variable of yours in (repeatable); none is passed otherwise but a safe few")
    parser.add_argument("--home", type=Path, metavar="DIR", help="a directory to be the agent's home (default: an "
                                                                 "empty one for the run)")
    parser.add_argument("--hook", metavar="AGENT", help="also install gitvow-gate's hook for this agent (claude, "
                        "codex, cursor, gemini, copilot) in the sandbox's home, reading the gate's part of the policy")
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG…]", help="the command to run inside")


def run(args: argparse.Namespace) -> int:
    from gitvow.errors import GitvowError
    from gitvow_sandbox.run import SETUP_FAILED, RunOptions
    from gitvow_sandbox.run import run as run_sandboxed

    command = list(args.argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("gitvow run: error: name the command to run after --", file=sys.stderr)
        return 2
    if args.policy is None:
        print("gitvow run: error: give --policy FILE (or set GITVOW_POLICY)", file=sys.stderr)
        return 2
    options = RunOptions(agent=args.agent, policy=args.policy, command=command, proxy=args.proxy,
                         env_json=args.env_json, allow_write=args.allow_write, allow_read=args.allow_read,
                         pass_env=args.pass_env,
                         home=args.home, hook=args.hook)
    try:
        return run_sandboxed(options)
    except GitvowError as exc:
        print(f"gitvow run: {exc}", file=sys.stderr)
        return SETUP_FAILED
