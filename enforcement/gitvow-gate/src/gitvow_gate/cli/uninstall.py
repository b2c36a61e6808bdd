"""``gitvow uninstall --agent NAME [--user | REPO]``: remove what ``gitvow install`` wrote."""

from __future__ import annotations

import argparse

from gitvow_gate.cli.install import add_parser as add_parser
from gitvow_gate.cli.install import change


def run(args: argparse.Namespace) -> int:
    return change(args, uninstalling=True)
