"""``gitvow pause REPO``: refuse every agent write to a repository (``repo_paused``) from the
next request on, without restarting the proxy (a run-state flag in its store)."""

from __future__ import annotations

import argparse
import sys

from gitvow.errors import GitvowError
from gitvow_proxy.cli._state import add_arguments, opened
from gitvow_proxy.store import PAUSED


def add_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.add_argument("repo", help="owner/name")
    parser.add_argument("--reason", default=None, help="why, for the audit log")


def run(args: argparse.Namespace) -> int:
    return set_paused(args, True)


def set_paused(args: argparse.Namespace, on: bool) -> int:
    word = "pause" if on else "resume"
    if args.repo.count("/") < 1 or args.repo.startswith("/") or args.repo.endswith("/"):
        print(f"gitvow {word}: expected owner/name, got {args.repo!r}", file=sys.stderr)
        return 2
    try:
        with opened(args) as state:
            state.store.set_flag(PAUSED, args.repo, on)
            audit = state.audit()
            try:
                audit.write(agent=None, host="-", method="-", path="-", repo=args.repo.lower(),
                            verdict="paused" if on else "resumed", stage="run_state", note=getattr(args, "reason", None))
            finally:
                audit.close()
            from gitvow_proxy.settings import ProxyPolicy

            in_file = args.repo.lower() in {r.lower() for r in state.policy.section(ProxyPolicy).run_state.paused}
    except GitvowError as exc:
        print(f"gitvow {word}: {exc}", file=sys.stderr)
        return 2
    if on:
        print(f"paused {args.repo.lower()}: the proxy refuses agent writes to it (repo_paused) from the next request")
    else:
        print(f"resumed {args.repo.lower()}" + (" at run time; it is still paused in the policy file's [run_state]"
                                                if in_file else ""))
    return 0
