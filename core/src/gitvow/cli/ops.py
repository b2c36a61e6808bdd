"""``gitvow ops``: the vocabulary, each operation's default rule, and which adapters cover it."""

from __future__ import annotations

import argparse

from gitvow.cli.common import print_json
from gitvow.plugins import installed
from gitvow.policy.table import DEFAULT_TABLE
from gitvow.vocabulary import OPERATIONS


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list of objects")


def coverage() -> dict[str, list[str]]:
    """operation → names of installed adapters that classify it (have a fixture for it)."""
    covered: dict[str, list[str]] = {name: [] for name in OPERATIONS}
    for adapter in installed().adapters.values():
        ops = {op for f in [*adapter.fixtures(), *adapter.fail_closed_fixtures()] for op in f.operations}
        for op in sorted(ops & set(covered)):
            covered[op].append(adapter.name)
    return covered


def run(args: argparse.Namespace) -> int:
    covered = coverage()
    rows = [
        {
            "name": op.name,
            "writes": op.writes,
            "default": DEFAULT_TABLE[op.name].describe(),
            "adapters": covered[op.name],
            "description": op.description,
        }
        for op in OPERATIONS.values()
    ]
    if args.json:
        print_json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)  # type: ignore[arg-type]
    print(f"{'OPERATION':<{width}}  WRITES  {'DEFAULT':<24}  ADAPTERS")
    for r in rows:
        writes = "yes" if r["writes"] else "no"
        adapters = ", ".join(r["adapters"]) or "-"  # type: ignore[arg-type]
        print(f"{r['name']:<{width}}  {writes:<6}  {r['default']:<24}  {adapters}")
    return 0
