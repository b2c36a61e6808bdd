"""``gitvow approvals``: list, show, approve, reject and wait for requests the proxy staged.

Reads and writes the proxy's state store; it never needs the forge token: the proxy notices an
approval in the store and sends the request itself, once (see :mod:`gitvow_proxy.sender`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gitvow.approval_context import DIFF_LIMIT, ApprovalContext
from gitvow.errors import GitvowError
from gitvow_proxy.approval_context import stored_context
from gitvow_proxy.approvals import FAILED, FINAL, PENDING, REJECTED, SENT, Approval
from gitvow_proxy.audit import audit_approval
from gitvow_proxy.cli._state import State, add_arguments, add_by, opened, who
from gitvow_proxy.notify import delivery_state
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.stuck import RECORDS_LOST, is_stuck, resolve, stuck, stuck_note

#: ``wait``'s exit codes: sent and 2xx, anything else final, still waiting at the timeout,
#: stuck in sending (its outcome unknown until an operator resolves it).
WAIT_SENT, WAIT_NOT_SENT, WAIT_TIMEOUT, WAIT_STUCK = 0, 1, 3, 4


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("The proxy stages requests the `approval` relay refuses (pr.create and pr.merge by default). "
                     "Approve one and the proxy sends it upstream once; `wait` prints the upstream's answer.")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="pending and stuck approvals (--all: every recent one)")
    add_arguments(listing)
    listing.add_argument("--all", action="store_true", help="every status, newest first")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    show = sub.add_parser("show", help="one approval: what it will do, the request, its answer")
    add_arguments(show)
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="one JSON object (with the request body)")
    approve = sub.add_parser("approve", help="approve a pending approval: the proxy sends it once")
    add_arguments(approve)
    add_by(approve)
    approve.add_argument("id")
    reject = sub.add_parser("reject", help="reject a pending approval")
    add_arguments(reject)
    add_by(reject)
    reject.add_argument("id")
    reject.add_argument("--reason", required=True, help="why, shown to the agent and by `wait`")
    resolve = sub.add_parser("resolve", help="an approval stuck in sending: say whether the forge acted on it")
    add_arguments(resolve)
    add_by(resolve)
    resolve.add_argument("id")
    outcome = resolve.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--sent", action="store_true", help="the forge did it: the agent's retry is never sent again")
    outcome.add_argument("--failed", action="store_true",
                         help="the forge did not: the agent's next identical request is staged anew")
    resolve.add_argument("--note", default=None, help="what you saw on the forge, for the audit log")
    wait = sub.add_parser("wait", help="wait until an approval is decided and sent; print the upstream's answer")
    add_arguments(wait)
    wait.add_argument("id")
    wait.add_argument("--timeout", type=float, default=None, help="seconds to wait (default: for ever)")
    wait.add_argument("--interval", type=float, default=0.5, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    try:
        with opened(args) as state:
            return int(ACTIONS[args.action](state, args))
    except GitvowError as exc:
        print(f"gitvow approvals {args.action}: {exc}", file=sys.stderr)
        return 2


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


_COLUMNS = ("ID", "STATUS", "AGENT", "OPERATIONS", "REPOSITORY", "REQUEST", "WHAT")


def _table(found: list[Approval], repos: dict[str, str], stuck_after: float) -> list[str]:
    """``approvals list``: one row per approval under a header, columns as wide as their widest cell."""
    rows = [_COLUMNS]
    for a in found:
        what = ", ".join(f"{k}={v!r}" for k, v in a.summary().items() if k in ("title", "head", "base", "merge method"))
        status = "STUCK sending" if is_stuck(a, time.time(), stuck_after) else a.status
        rows.append((a.id, status, a.agent, ",".join(a.operations), a.repo or repos.get(a.id) or "-", a.target, what))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows]


def _stuck_after(state: State) -> float:
    return state.policy.section(ProxyPolicy).approvals.stuck_after


def _list(state: State, args: argparse.Namespace) -> int:
    now = time.time()
    found = state.store.approvals(None if args.all else [PENDING])
    if not args.all:  # a stuck one is never out of sight
        found = stuck(state.store, now, _stuck_after(state)) + found
    repos = {a.id: c.repo for a in found if a.repo is None and (c := stored_context(state.store, a.id)) and c.repo}
    if args.json:
        print(json.dumps([{**a.as_json(), "repo": a.repo or repos.get(a.id)} for a in found], indent=2))
    elif not found:
        print("no approvals" if args.all else "no pending approvals")
    else:
        print("\n".join(line.rstrip() for line in _table(found, repos, _stuck_after(state))))
        for a in found:
            if is_stuck(a, now, _stuck_after(state)):
                print(stuck_note(a, now), file=sys.stderr)
    return 0


def _get(state: State, approval_id: str) -> Approval:
    found = state.store.approval(approval_id)
    if found is None:
        raise GitvowError(f"no approval {approval_id!r} in {state.policy.source}'s state store")
    return found


def _print_context(c: ApprovalContext | None) -> None:
    if c is None:
        print("  forge       not asked yet")
        return
    if c.error:
        print(f"  forge       {c.error}")
        return
    print(f"  forge       asked {_when(c.fetched_at)}")
    if c.pull is not None:
        p = c.pull
        for label, value in (("pull", f"#{p.number} {p.title}"), ("author", p.author), ("state", p.state),
                             ("mergeable", p.mergeable), ("checks", p.checks), ("reviews", p.reviews), ("url", p.url)):
            print(f"  {label:<11} {value}")
    print(f"  branches    {c.head} -> {c.base}")
    print(f"  head sha    {c.head_sha or '-'} (an approved send is pinned to it)")
    if c.changes is not None:
        print(f"  changes     {len(c.changes.files)} files, +{c.changes.additions} -{c.changes.deletions}")
        for f in c.changes.files:
            print(f"    {f.status:<9} +{f.additions or 0:<5} -{f.deletions or 0:<5} {f.path}")
        if c.changes.diff:
            print("  diff" + (f" (cut at {DIFF_LIMIT // 1024} KiB)" if c.changes.truncated else "") + ":")
            print("\n".join("    " + line for line in c.changes.diff.splitlines()))
    for note in c.notes:
        print(f"  note        {note}")


def _print_summary(a: Approval) -> None:
    """What it will do: the one write's fields, or each write of several under its number."""
    summary = a.summary()
    writes = summary.pop("writes", [])
    if len(writes) > 1:
        print(f"  writes      {len(writes)}, each its own operation:")
        for n, write in enumerate(writes, 1):
            print(f"  [{n}]")
            for key, value in write.items():
                print(f"    {key:<11} {value}")
    else:
        for key, value in summary.items():
            print(f"  {key:<11} {value}")


def _show(state: State, args: argparse.Namespace) -> int:
    a = _get(state, args.id)
    context = stored_context(state.store, a.id)
    if args.json:
        data = a.as_json(body=True)
        data["repo"] = a.repo or (context.repo if context is not None else None)
        data["context"] = context.as_json() if context is not None else None
        data["notifications"] = delivery_state(state.store, a.id)
        data["records_lost"] = state.store.annotations(a.id).get(RECORDS_LOST)
        print(json.dumps(data, indent=2))
        return 0
    print(f"approval {a.id}: {a.status}")
    if lost := state.store.annotations(a.id).get(RECORDS_LOST):
        print(f"  WARNING     {lost}")
    print(f"  agent       {a.agent}")
    print(f"  operations  {', '.join(a.operations)}")
    print(f"  repository  {a.repo or (context.repo if context is not None else None) or '-'}")
    print(f"  request     {a.target} on {a.url.split('://', 1)[-1].partition('/')[0]}")
    print(f"  staged      {_when(a.created)} (expires {_when(a.expires)})")
    _print_summary(a)
    if a.decided_by:
        verb = "rejected" if a.status == REJECTED else "approved"
        print(f"  decided     {_when(a.decided_at)} {verb} by {a.decided_by}"
              + (f": {a.reason}" if a.reason and a.status == REJECTED else ""))
    if a.status == FAILED:
        print(f"  not sent    {a.reason or 'no answer from the upstream'}")
    if a.sent_at:
        print(f"  answered    {_when(a.sent_at)}: {a.response_status or '-'}")
    _print_context(context)
    for key, value in sorted(delivery_state(state.store, a.id).items()):
        print(f"  notified    {key}: {value}")
    return 0


def _decide(state: State, args: argparse.Namespace, approve: bool) -> int:
    by = who(args)
    decided = state.store.decide(args.id, approve=approve, by=by, reason=getattr(args, "reason", None), now=time.time())
    audit = state.audit()
    try:
        audit_approval(audit, decided, "approved" if approve else "rejected", by=by, reason=decided.reason)
    finally:
        audit.close()
    if approve:
        print(f"approved {decided.id}: the proxy sends it upstream once; `gitvow approvals wait {decided.id}` shows the answer")
    else:
        print(f"rejected {decided.id}")
    return 0


def _resolve(state: State, args: argparse.Namespace) -> int:
    by = who(args)
    done = resolve(state.store, args.id, sent=args.sent, by=by, now=time.time(), bound=_stuck_after(state),
                   note=args.note)
    audit = state.audit()
    try:
        audit_approval(audit, done, "resolved_sent" if args.sent else "resolved_failed", by=by, note=done.reason)
    finally:
        audit.close()
    if args.sent:
        print(f"resolved {done.id} as sent: the agent's retry is told so and never sent again")
    else:
        print(f"resolved {done.id} as not sent: the agent's next identical request is staged anew for a human")
    return 0


def _wait(state: State, args: argparse.Namespace) -> int:
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while True:
        a = _get(state, args.id)
        if a.status == PENDING and a.expires <= time.time():
            a = next((x for x in state.store.expire(time.time()) if x.id == a.id), a)
        if a.status in FINAL:
            return _report_final(a)
        if is_stuck(a, time.time(), _stuck_after(state)):
            print(stuck_note(a, time.time()), file=sys.stderr)
            return WAIT_STUCK
        if deadline is not None and time.monotonic() >= deadline:
            print(f"approval {a.id} is still {a.status}", file=sys.stderr)
            return WAIT_TIMEOUT
        time.sleep(args.interval)


def _report_final(a: Approval) -> int:
    """What ``approvals wait`` prints, and its exit code, once ``a`` can change no more."""
    if a.status == SENT and a.response_status is None:
        print(f"approval {a.id} sent, as an operator said ({a.reason}); the forge's answer was not recorded")
        return WAIT_SENT
    if a.status == SENT:
        body = a.response_body.decode("utf-8", "replace")
        url = _url_of(body)
        if url:
            print(url)
        print(f"approval {a.id} sent: the upstream answered {a.response_status}")
        if body:
            print(body)
        ok = a.response_status is not None and 200 <= a.response_status < 300
        return WAIT_SENT if ok else WAIT_NOT_SENT
    if a.status == REJECTED:
        print(f"approval {a.id} was rejected by {a.decided_by}: {a.reason or 'no reason given'}", file=sys.stderr)
    else:
        print(f"approval {a.id} {a.status}" + (f": {a.reason}" if a.reason else ""), file=sys.stderr)
    return WAIT_NOT_SENT


def _url_of(body: str) -> str | None:
    """A created object's web address (REST ``html_url``/``web_url``, GraphQL ``url``), if any."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("html_url", "web_url", "url"):
                if isinstance(item.get(key), str):
                    return str(item[key])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


ACTIONS = {
    "list": _list,
    "show": _show,
    "approve": lambda s, a: _decide(s, a, True),
    "reject": lambda s, a: _decide(s, a, False),
    "wait": _wait,
    "resolve": _resolve,
}
