"""Helpers the subcommands share: loading plugins and a policy, printing errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from gitvow.errors import GitvowError
from gitvow.pipeline import Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy, load_policy


def engine(policy_path: str | None, plugins: Plugins | None = None) -> Engine:
    """The engine for a policy file (or the compiled-in defaults) over the installed plugins."""
    plugins = plugins or installed()
    for failure in plugins.failures:
        print(f"gitvow: warning: {failure}", file=sys.stderr)
    policy = load_policy(policy_path, relays=plugins.relays) if policy_path else Policy(relays=plugins.relays)
    return Engine(policy, plugins)


def error(exc: GitvowError | str) -> int:
    """Print one line to stderr and return the exit status for a user error."""
    print(f"gitvow: error: {exc}", file=sys.stderr)
    return 1


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
