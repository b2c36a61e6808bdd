"""``gitvow install --agent NAME [--user | REPO]``: write the agent's hook configuration.

Per user (``--user``: the agent's file under ``~``) or per repository (``REPO``, default the
current one). The hook is named by the absolute path of the ``gitvow-hook`` beside the ``gitvow``
that ran the install, inside a wrapper that turns a missing or broken ``gitvow-hook`` into the
agent's own refusal; the
installed command is then run once on a harmless call to prove it answers. Idempotent;
``gitvow uninstall`` with the same arguments undoes it.
"""

from __future__ import annotations

import argparse
import os
import sys

from gitvow_gate.gate_policy import find_repo_root
from gitvow_gate.hook_client import AGENT_NAMES
from gitvow_gate.hook_installer import InstallError, install, probe, uninstall


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", required=True, choices=AGENT_NAMES)
    parser.add_argument("--user", action="store_true", help="install for this user (all repositories)")
    parser.add_argument("repo", nargs="?", default=None, help="repository to install into (default: the current one)")


def target(args: argparse.Namespace) -> tuple[str, str]:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    start = args.repo or os.getcwd()
    repo = find_repo_root(start) or os.path.abspath(start)
    return home, repo


def run(args: argparse.Namespace) -> int:
    return change(args, uninstalling=False)


def change(args: argparse.Namespace, *, uninstalling: bool) -> int:
    """Install or uninstall the agent's hook configuration, reporting one line either way."""
    if args.user and args.repo:
        print("gitvow: error: give --user or a repository, not both", file=sys.stderr)
        return 1
    home, repo = target(args)
    action = uninstall if uninstalling else install
    try:
        print(action(args.agent, user=args.user, repo=repo, home=home))
    except InstallError as exc:
        print(f"gitvow: error: {exc}", file=sys.stderr)
        return 1
    if uninstalling:
        return 0
    answered, line = probe(args.agent, cwd=repo)
    if not answered:
        print(f"gitvow: error: {line}; every tool call will be refused until it answers", file=sys.stderr)
        return 1
    print(line)
    return 0
