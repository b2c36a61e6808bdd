"""``gitvow plugins``: discovered plugins with distribution, version, adapters, hosts and commands."""

from __future__ import annotations

import argparse
from typing import Any

from gitvow.cli.common import print_json
from gitvow.plugins import installed


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def report() -> dict[str, Any]:
    found = installed()
    commands: dict[str, list[str]] = {}
    for name in found.commands:
        commands.setdefault(found.command_plugin[name], []).append(name)
    plugins = [
        {
            "name": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "adapters": [{"name": a, "hosts": list(found.adapters[a].default_hosts)} for a in info.adapters],
            "commands": sorted(commands.get(info.name, ())),
        }
        for info in sorted(found.infos, key=lambda i: i.name)
    ]
    failures = [{"plugin": f.plugin, "error": str(f)} for f in found.failures]
    return {"plugins": plugins, "failures": failures, "disabled": list(found.disabled)}


def run(args: argparse.Namespace) -> int:
    data = report()
    if args.json:
        print_json(data)
    else:
        for plugin in data["plugins"]:
            print(f"{plugin['name']}  ({plugin['distribution']} {plugin['version']})")
            for adapter in plugin["adapters"]:
                hosts = ", ".join(adapter["hosts"]) or "(hosts from [hosts] only)"
                print(f"    adapter {adapter['name']}: {hosts}")
            if plugin["commands"]:
                print(f"    commands: {', '.join('gitvow ' + c for c in plugin['commands'])}")
        for failure in data["failures"]:
            print(f"FAILED  {failure['error']}")
        if data["disabled"]:
            print(f"disabled by GITVOW_DISABLE_PLUGINS: {', '.join(data['disabled'])}")
    return 1 if data["failures"] else 0
