"""``gitvow policy check FILE`` and ``gitvow policy schema``."""

from __future__ import annotations

import argparse

from gitvow.cli.common import engine, error, print_json
from gitvow.errors import GitvowError


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="validate a policy file (exit 0 when it loads)")
    check.add_argument("file")
    sub.add_parser("schema", help="print the JSON Schema of the policy file")


def run(args: argparse.Namespace) -> int:
    if args.policy_command == "schema":
        from gitvow.policy.model import PolicyFile

        print_json(PolicyFile.model_json_schema())
        return 0
    try:
        engine(args.file)
    except GitvowError as exc:
        return error(exc)
    print(f"{args.file}: ok")
    from pathlib import Path

    from gitvow.gate.schema import ignored_keys
    from gitvow.policy.load import read_document

    ignored = ignored_keys(read_document(Path(args.file)))
    if ignored:
        print(f"ignored (gitvow 0.42 keys accepted but not acted on, and comments): {', '.join(ignored)}")
    return 0
