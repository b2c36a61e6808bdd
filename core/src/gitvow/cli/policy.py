"""``gitvow policy check FILE`` and ``gitvow policy schema``: exactly what is installed.

Both see the core's keys plus the sections every installed plugin registered: a key of an
enforcement point that is not installed is an error naming its distribution, and the schema
describes only the keys something here reads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gitvow.cli.common import engine, error, print_json
from gitvow.errors import GitvowError, PolicyError
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.policy.selftest import failures


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="validate a policy file (exit 0 when it loads)")
    check.add_argument("file")
    sub.add_parser("schema", help="print the JSON Schema of the policy file, as installed")


def run(args: argparse.Namespace) -> int:
    plugins = installed()
    if args.policy_command == "schema":
        from gitvow.policy.model import composed_model

        print_json(composed_model(plugins.sections, plugins.adapters.values()).model_json_schema())
        return 0
    try:
        loaded = engine(args.file, plugins, absent="error").policy
        if not isinstance(loaded, Policy):  # a file was named: the loader's policy, sections and all
            raise TypeError("internal error: loaded is not Policy")
        problems = failures(loaded, plugins)
        if problems:
            raise PolicyError("; ".join(problems), source=args.file)
    except GitvowError as exc:
        return error(exc)
    print(f"{args.file}: ok")
    if loaded.model.tests:
        print(f"{len(loaded.model.tests)} tests passed")
    for section in plugins.sections:
        for note in section.notes(loaded) if section.notes is not None else ():
            print(f"note: {note}")
    from gitvow.policy.load import read_document

    data = read_document(Path(args.file))
    ignored = [key for section in plugins.sections for key in section.ignored if key in data]
    comments = [key for key in data if isinstance(key, str) and key.startswith("_")]
    if ignored or comments:
        print(f"ignored (gitvow 0.42 keys accepted but not acted on, and comments): {', '.join(ignored + comments)}")
    return 0
