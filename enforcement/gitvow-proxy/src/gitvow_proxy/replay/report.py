"""Comparing two decisions per request, and grouping the changes for a person or a CI job.

A change is ``allow→deny`` or ``deny→allow`` when the request would now pass where it was
refused or the reverse (a throttle and a 407 count as refusals, a tunnel as passing, and a
request a human approved and the proxy sent — or an identical retry answered with that
send's response — as passing), and
``changed`` when it is refused either way for a different reason (or passes differently).
Groups are by kind, operation, agent, repository and the two decisions; each has a count
and the first request as an example (method and URL without the query string, which may
carry tokens in a plain recording).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gitvow_proxy.replay.inputs import Outcome, Recorded

ALLOW_TO_DENY = "allow→deny"
DENY_TO_ALLOW = "deny→allow"
CHANGED = "changed"
KINDS = (ALLOW_TO_DENY, DENY_TO_ALLOW, CHANGED)


def kind_of(old: Outcome, new: Outcome) -> str | None:
    """The kind of change from ``old`` to ``new``, or None when the decision is the same.

    A request both sides put before a human (the approval relay) is decided the same: what the
    human answered then (sent, rejected, expired, an identical retry answered from the record)
    is the answer the human gives again; the recording cannot say otherwise."""
    if old.held and new.held:
        return None
    if old.allowed != new.allowed:
        return ALLOW_TO_DENY if old.allowed else DENY_TO_ALLOW
    if old.key() != new.key():
        return CHANGED
    return None


@dataclass
class Group:
    kind: str
    operation: str
    agent: str | None
    repo: str | None
    old: Outcome
    new: Outcome
    example: Recorded
    count: int = 0

    def as_dict(self) -> dict[str, Any]:
        request = self.example.request
        return {
            "kind": self.kind,
            "operation": self.operation,
            "agent": self.agent,
            "repo": self.repo,
            "old": {"verdict": self.old.verdict, "reason": self.old.reason, "stage": self.old.stage},
            "new": {"verdict": self.new.verdict, "reason": self.new.reason, "stage": self.new.stage},
            "count": self.count,
            "example": {"method": request.method, "url": example_url(self.example), "source": self.example.source},
        }


def example_url(item: Recorded) -> str:
    request = item.request
    default = 443 if request.scheme == "https" else 80
    port = "" if request.port == default else f":{request.port}"
    return f"{request.scheme}://{request.host}{port}{request.path}"


@dataclass
class Report:
    """Every change, grouped; counts of what was replayed and what could not be."""

    old_label: str
    new_label: str
    requests: int = 0
    groups: dict[tuple[object, ...], Group] = field(default_factory=dict)
    #: Stage or input → what replay did about it (replayed from the recording, skipped, …).
    limits: dict[str, str] = field(default_factory=dict)

    def add(self, item: Recorded, old: Outcome, new: Outcome) -> None:
        self.requests += 1
        kind = kind_of(old, new)
        if kind is None:
            return
        operations = new.operations or old.operations
        operation = operations[0] if operations else "-"
        repo = new.repo or old.repo
        key = (kind, operation, item.agent, repo, old.key(), new.key())
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(kind, operation, item.agent, repo, old, new, item)
        group.count += 1

    def ordered(self) -> list[Group]:
        rank = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(self.groups.values(),
                      key=lambda g: (rank[g.kind], g.operation, g.agent or "", g.repo or "", g.old.key(), g.new.key()))

    def count(self, kind: str) -> int:
        return sum(g.count for g in self.groups.values() if g.kind == kind)

    @property
    def flips(self) -> int:
        return self.count(ALLOW_TO_DENY) + self.count(DENY_TO_ALLOW)

    @property
    def changed(self) -> int:
        return sum(g.count for g in self.groups.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "old": self.old_label,
            "new": self.new_label,
            "requests": self.requests,
            "changed": self.changed,
            "flips": self.flips,
            "counts": {kind: self.count(kind) for kind in KINDS},
            "limits": dict(self.limits),
            "groups": [g.as_dict() for g in self.ordered()],
        }

    def lines(self) -> Iterable[str]:
        yield f"old: {self.old_label}"
        yield f"new: {self.new_label}"
        yield "stages and inputs:"
        for name, what in self.limits.items():
            yield f"  {name}: {what}"
        yield (f"{self.requests} requests replayed; {self.changed} decisions change "
               f"({self.count(ALLOW_TO_DENY)} allow→deny, {self.count(DENY_TO_ALLOW)} deny→allow, "
               f"{self.count(CHANGED)} changed reason)")
        current = None
        for group in self.ordered():
            if group.kind != current:
                current = group.kind
                yield ""
                yield f"{current} ({self.count(current)})"
            yield (f"  {group.count:>5}×  {group.operation}  agent={group.agent or '-'}  repo={group.repo or '-'}  "
                   f"{group.old.label()} → {group.new.label()}")
            yield f"         e.g. {group.example.request.method} {example_url(group.example)}  ({group.example.source})"
