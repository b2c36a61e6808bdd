"""What the proxy is doing, from what it leaves behind: the state store and the audit log.

One function per view, shared by ``gitvow status`` and the approval desk, so both show the
same numbers: each agent's mode and write budget (used and left in the current window), the
paused repositories (the policy file's and the run-time ones), pending approvals, recent
refusals, and decisions over time by verdict and reason: every replica's, from a shared store
(:mod:`gitvow_proxy.cluster_view`), else this host's audit log's tail.
"""

from __future__ import annotations

import calendar
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvow.policy.load import Policy
from gitvow_proxy.approvals import PENDING
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.store import PAUSED, Store

#: How much of the audit log's end is read (bytes): enough for a day of a busy proxy's refusals.
AUDIT_TAIL = 4 * 1024 * 1024
REFUSALS = frozenset({"deny", "throttle", "refuse", "would_refuse"})
_REFUSALS = REFUSALS
_DECISIONS = _REFUSALS | {"allow"}


@dataclass(frozen=True, slots=True)
class Span:
    """A chart's time range and bucket size."""

    name: str
    seconds: int
    buckets: int


SPANS = {"1h": Span("1h", 3600, 30), "24h": Span("24h", 86400, 24), "7d": Span("7d", 7 * 86400, 28)}


def read_audit(path: str, *, since: float, limit: int = AUDIT_TAIL) -> list[dict[str, Any]]:
    """Audit records at or after ``since`` from the last ``limit`` bytes of the log (none for ``-``)."""
    if path == "-":
        return []
    target = Path(path).expanduser()
    try:
        with target.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return []
    if len(data) == limit:
        data = data.partition(b"\n")[2]  # the first line is probably cut
    records = []
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        at = _time(record.get("time"))
        if at is not None and at >= since:
            record["at"] = at
            records.append(record)
    return records


def _time(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        whole, _, fraction = text.rstrip("Z").partition(".")
        seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
        return seconds + (float(f"0.{fraction}") if fraction else 0.0)
    except (ValueError, OverflowError):
        return None


def series_of(record: dict[str, Any]) -> str | None:
    """A request decision's chart series: ``allow``, or ``deny: mode_denied`` and the like."""
    verdict = record.get("verdict")
    if record.get("stage") == "approval" or verdict not in _DECISIONS:
        return None  # approval steps, pauses and tunnels are not decisions on a request
    reason = record.get("reason")
    return verdict if not reason else f"{verdict}: {reason}"


def decisions_over_time(records: list[dict[str, Any]], span: Span, now: float) -> dict[str, Any]:
    """``{"start", "bucket_seconds", "series": {name: [count per bucket]}}``, oldest bucket first."""
    width = span.seconds / span.buckets
    start = now - span.seconds
    series: dict[str, list[int]] = {}
    for record in records:
        name = series_of(record)
        if name is None or record["at"] < start:
            continue
        index = min(span.buckets - 1, int((record["at"] - start) // width))
        series.setdefault(name, [0] * span.buckets)[index] += 1
    return {"start": start, "bucket_seconds": width, "series": _ordered(series)}


def _ordered(series: dict[str, list[int]]) -> dict[str, list[int]]:
    return dict(sorted(series.items(), key=lambda item: (item[0] != "allow", item[0])))


def cluster_over_time(store: Store, span: Span, now: float) -> dict[str, Any] | None:
    """Every replica's decisions over ``span`` from the shared store (the buckets end with the
    current one, aligned to their width); None when the store keeps none."""
    width = span.seconds // span.buckets
    first = int(now) // width * width - (span.buckets - 1) * width
    series = store.timeline(width, first, span.buckets)
    if series is None:
        return None
    return {"start": float(first), "bucket_seconds": float(width), "series": _ordered(series)}


def paused(policy: Policy, store: Store) -> dict[str, str]:
    """Paused repositories → where the pause comes from (``policy`` or ``run time``)."""
    found = {repo.lower(): "policy" for repo in policy.section(ProxyPolicy).run_state.paused}
    for repo in store.flags(PAUSED):
        found.setdefault(repo, "run time")
    return dict(sorted(found.items()))


def pause_reasons(records: list[dict[str, Any]]) -> dict[str, str]:
    """Each repository paused at run time → the reason its latest ``paused`` line gave."""
    found: dict[str, str] = {}
    for record in records:
        repo = record.get("repo")
        if record.get("stage") != "run_state" or not isinstance(repo, str):
            continue
        if record.get("verdict") == "paused" and record.get("note"):
            found[repo] = str(record["note"])
        else:
            found.pop(repo, None)
    return found


def agents(policy: Policy, store: Store, now: float) -> list[dict[str, Any]]:
    """Each agent's mode and write budget in the current window."""
    budget = policy.section(ProxyPolicy).budget
    rows = []
    for name, rule in sorted(policy.model.agents.items()):
        total, per_op = budget.limits_for(name)
        used = store.usage(f"budget:{name}:writes", now, budget.window_seconds)
        ops = {
            op: {"limit": limit, "used": (n := store.usage(f"budget:{name}:op:{op}", now, budget.window_seconds)),
                 "left": max(0, limit - n)}
            for op, limit in sorted(per_op.items())
        }
        rows.append({
            "agent": name,
            "mode": rule.mode or "advisory",
            "writes_used": used,
            "writes_limit": total,
            "writes_left": None if total is None else max(0, total - used),
            "operations": ops,
            "window_seconds": budget.window_seconds,
        })
    return rows


def _with_repo(store: Store, data: dict[str, Any]) -> dict[str, Any]:
    """An approval's JSON with the repository the forge named when the request names none."""
    if data.get("repo") is None:
        from gitvow_proxy.approval_context import stored_context

        context = stored_context(store, str(data["id"]))
        data["repo"] = context.repo if context is not None else None
    return data


def stuck_approvals(store: Store, now: float, bound: float) -> list[dict[str, Any]]:
    """Approvals stuck in ``sending`` (:mod:`gitvow_proxy.stuck`), each with what to do about it."""
    from gitvow_proxy.stuck import stuck, stuck_note

    return [{**_with_repo(store, a.as_json()), "stuck": stuck_note(a, now)} for a in stuck(store, now, bound)]


def gather(policy: Policy, store: Store, *, now: float | None = None, span: Span = SPANS["24h"],
           refusals: int = 20) -> dict[str, Any]:
    """Everything ``gitvow status --json`` prints and the desk shows."""
    now = time.time() if now is None else now
    settings = policy.section(ProxyPolicy)
    records = read_audit(settings.audit.path, since=now - max(span.seconds, 3600))
    recent = [
        {k: r.get(k) for k in ("time", "agent", "method", "host", "path", "operations", "repo", "verdict", "reason")}
        for r in records if r.get("verdict") in _REFUSALS
    ][-refusals:][::-1]
    pending = [_with_repo(store, a.as_json()) for a in store.approvals([PENDING]) if a.expires > now]
    stuck = stuck_approvals(store, now, settings.approvals.stuck_after)
    from gitvow_proxy.runtime import shadowed

    return {
        #: Agents whose refusals are only recorded (shadow mode): shown first, loudly.
        "shadow": sorted(shadowed(policy)),
        "policy": policy.source,
        "state": settings.proxy.state,
        "audit": settings.audit.path,
        "agents": agents(policy, store, now),
        "paused": paused(policy, store),
        "pause_reasons": pause_reasons(read_audit(settings.audit.path, since=0.0)),
        "pending_approvals": pending,
        "stuck_approvals": stuck,
        "recent_refusals": recent,
        "decisions": decisions_over_time(records, span, now),
        "decision_totals": dict(Counter(n for r in records if (n := series_of(r)) is not None).most_common()),
        **_cluster(store, refusals, span, now),
    }


def _cluster(store: Store, refusals: int, span: Span, now: float) -> dict[str, Any]:
    """Every replica's totals, latest refusals and decisions over time, when the store keeps
    them (:mod:`gitvow_proxy.cluster_view`): they replace this host's audit log's."""
    try:
        shared = store.tally()
        over_time = cluster_over_time(store, span, now) if shared is not None else None
    except Exception:  # the store is down: the local audit log is all there is
        return {"view": "this replica's audit log (the state store cannot be reached)"}
    if shared is None or over_time is None:
        return {"view": "audit log"}
    counts, latest = shared
    return {"view": "every replica (the state store)", "decision_totals": dict(Counter(counts).most_common()),
            "recent_refusals": latest[:refusals], "decisions": over_time}


__all__ = ["REFUSALS", "SPANS", "Span", "agents", "cluster_over_time", "decisions_over_time", "gather", "pause_reasons", "paused", "read_audit", "series_of", "stuck_approvals"]
