"""``gitvow uninstall --agent NAME [--user | REPO]``: remove what ``gitvow install`` wrote."""

from __future__ import annotations

import argparse
import sys

from gitvow.cli.install import add_parser as add_parser
from gitvow.cli.install import target


def run(args: argparse.Namespace) -> int:
    from gitvow.gate.install import InstallError, uninstall

    if args.user and args.repo:
        print("gitvow: error: give --user or a repository, not both", file=sys.stderr)
        return 1
    home, repo = target(args)
    try:
        print(uninstall(args.agent, user=args.user, repo=repo, home=home))
    except InstallError as exc:
        print(f"gitvow: error: {exc}", file=sys.stderr)
        return 1
    return 0
