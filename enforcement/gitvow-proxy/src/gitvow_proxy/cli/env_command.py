"""``gitvow env --agent NAME``: the shell environment that sends an agent through the proxy."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Prints the proxy URL with the agent's credentials, the CA bundle variables and placeholder "
                     "forge tokens (the agent's canary, replaced by the proxy on the wire). "
                     'Use: eval "$(gitvow env --policy FILE --agent NAME)"')
    parser.add_argument("--policy", required=True, type=Path, help="policy file (TOML or JSON)")
    parser.add_argument("--agent", required=True, help="agent name, as in [agents.NAME]")
    parser.add_argument("--listen-host", help="the proxy's address, if not [proxy] listen_host")
    parser.add_argument("--listen-port", type=int, help="the proxy's port, if not [proxy] listen_port")
    parser.add_argument("--confdir", help="the proxy's mitmproxy directory, if not [proxy] confdir")
    parser.add_argument("--state", help="the proxy's state store, if not [proxy] state")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of shell exports")


def run(args: argparse.Namespace) -> int:
    from gitvow.errors import GitvowError
    from gitvow_proxy.agentenv import agent_environment

    try:
        env = agent_environment(
            args.policy,
            args.agent,
            listen_host=args.listen_host,
            listen_port=args.listen_port,
            confdir=args.confdir,
            state=args.state,
        )
    except GitvowError as exc:
        print(f"gitvow env: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(env, indent=2))
    else:
        for name, value in env.items():
            print(f"export {name}={shlex.quote(value)}")
    return 0
