"""``gitvow plugins``: discovered plugins with distribution, version, adapters and hosts."""

from __future__ import annotations

import argparse

from gitvow.cli.common import print_json
from gitvow.plugins import installed


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    found = installed()
    rows = []
    for info in sorted(found.infos, key=lambda i: i.name):
        rows.append(
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "adapters": [
                    {"name": a, "hosts": list(found.adapters[a].default_hosts)} for a in info.adapters
                ],
            }
        )
    failures = [{"plugin": f.plugin, "error": str(f)} for f in found.failures]
    if args.json:
        print_json({"plugins": rows, "failures": failures})
    else:
        for row in rows:
            print(f"{row['name']}  ({row['distribution']} {row['version']})")
            for adapter in row["adapters"]:  # type: ignore[attr-defined]
                hosts = ", ".join(adapter["hosts"]) or "(hosts from [hosts] only)"
                print(f"    adapter {adapter['name']}: {hosts}")
        for failure in failures:
            print(f"FAILED  {failure['error']}")
    return 1 if failures else 0
