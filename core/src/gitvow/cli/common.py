"""Helpers the subcommands share: loading plugins and a policy, printing errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from gitvow.errors import GitvowError
from gitvow.pipeline import Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Absent, Policy, load_policy


def engine(policy_path: str | None, plugins: Plugins | None = None, *, absent: Absent = "skip") -> Engine:
    """The engine for a policy file (or the compiled-in defaults) over the installed plugins.

    ``absent="skip"`` reads a file shared with an enforcement point that is not installed
    here (its keys are not this command's); ``gitvow policy check`` passes ``"error"``.
    """
    plugins = plugins or installed()
    for failure in plugins.failures:
        print(f"gitvow: warning: {failure}", file=sys.stderr)
    if policy_path:
        policy = load_policy(policy_path, relays=plugins.relays, sections=plugins.sections, absent=absent,
                             adapters=plugins.adapters)
    else:
        policy = Policy(relays=plugins.relays)
    return Engine(policy, plugins)


def error(exc: GitvowError | str) -> int:
    """Print one line to stderr and return the exit status for a user error."""
    print(f"gitvow: error: {exc}", file=sys.stderr)
    return 1


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
