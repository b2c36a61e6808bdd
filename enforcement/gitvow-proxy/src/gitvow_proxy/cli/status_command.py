"""``gitvow status``: each agent's mode and budget, paused repositories, pending approvals and
recent refusals, from the proxy's store and audit log."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gitvow.errors import GitvowError
from gitvow_proxy.cli._state import add_arguments, opened


def add_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")


def _print_stuck(stuck: list[dict[str, Any]]) -> None:
    """Approvals stuck in sending, loudly, each with what to do (nothing when there are none)."""
    if stuck:
        print(f"STUCK approvals (sent or not: unknown; resolve each): {len(stuck)}")
        for p in stuck:
            print(f"  {p['id']}  {p['agent']}  {','.join(p['operations'])}  {p['repo'] or '-'}  {p['request']}")
            print(f"    {p['stuck']}")


def run(args: argparse.Namespace) -> int:
    from gitvow_proxy.status import gather

    try:
        with opened(args) as state:
            data = gather(state.policy, state.store)
    except GitvowError as exc:
        print(f"gitvow status: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    if data["shadow"]:
        print(f"SHADOW MODE: not enforcing for {', '.join(data['shadow'])}: what the policy refuses is forwarded "
              "and recorded as would_refuse")
    print(f"policy {data['policy']}; state {data['state']}; audit {data['audit']}")
    print("agents:")
    for a in data["agents"]:
        budget = "no write budget" if a["writes_limit"] is None else (
            f"{a['writes_used']}/{a['writes_limit']} writes used, {a['writes_left']} left")
        ops = "".join(f"; {op} {v['used']}/{v['limit']}" for op, v in a["operations"].items())
        print(f"  {a['agent']:<14} {a['mode']:<17} {budget}{ops} (window {a['window_seconds']}s)")
    paused = data["paused"]
    why = data.get("pause_reasons", {})
    print("paused: " + (", ".join(f"{r} ({src}" + (f": {why[r]}" if why.get(r) else "") + ")"
                                  for r, src in paused.items()) if paused else "none"))
    pending = data["pending_approvals"]
    print(f"pending approvals: {len(pending)}")
    for p in pending:
        print(f"  {p['id']}  {p['agent']}  {','.join(p['operations'])}  {p['repo'] or '-'}  {p['request']}")
    _print_stuck(data["stuck_approvals"])
    refusals = data["recent_refusals"]
    totals = ", ".join(f"{k} {v}" for k, v in data["decision_totals"].items()) or "none"
    print(f"decisions ({data.get('view', 'audit log')}): {totals}")
    print(f"recent refusals: {len(refusals)}")
    for r in refusals[:10]:
        print(f"  {r['time']}  {r['agent'] or '-'}  {r['verdict']} {r['reason'] or ''}  {r['method']} {r['path']}")
    return 0
