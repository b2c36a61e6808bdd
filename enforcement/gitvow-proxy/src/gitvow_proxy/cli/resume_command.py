"""``gitvow resume REPO``: undo ``gitvow pause`` from the next request on."""

from __future__ import annotations

import argparse

from gitvow_proxy.cli._state import add_arguments
from gitvow_proxy.cli.pause_command import set_paused


def add_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.add_argument("repo", help="owner/name")


def run(args: argparse.Namespace) -> int:
    return set_paused(args, False)
