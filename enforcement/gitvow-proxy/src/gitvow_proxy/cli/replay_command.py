"""``gitvow replay``: which recorded requests a new policy decides differently (exit 1 on a flip)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Exit status: 0 when no decision flips between allow and deny, 1 when one does, "
                     "2 when a file or a policy cannot be read.")
    parser.add_argument("--policy", required=True, type=Path, metavar="NEW", help="the policy to try (TOML or JSON)")
    parser.add_argument("--against", type=Path, metavar="OLD",
                        help="the policy to compare with (default: the decisions the recording holds)")
    parser.add_argument("--agent", metavar="NAME",
                        help="the agent of requests whose file does not say (a HAR, a plain mitmdump recording)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="mitmproxy flow file (gitvow proxy --record, mitmdump -w), HAR file, or gitvow audit log")


def run(args: argparse.Namespace) -> int:
    from gitvow.cli.common import print_json
    from gitvow.errors import GitvowError
    from gitvow_proxy.replay import load, replay

    try:
        report = replay(load(args.files, agent=args.agent), args.policy, args.against)
    except GitvowError as exc:
        print(f"gitvow replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print_json(report.as_dict())
    else:
        for line in report.lines():
            print(line)
    return 1 if report.flips else 0
