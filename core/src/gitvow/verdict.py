"""Verdicts: allow, deny(code, reason) or relay(command) — and, at the agent hook, confirm."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Outcome(IntEnum):
    """Ordered by strictness, so ``max`` picks the verdict to report (relay > deny > allow)."""

    ALLOW = 0
    CONFIRM = 1
    DENY = 2
    RELAY = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision about one operation or a whole request.

    ``why`` is the human half of the denial line (what rule refused it); ``instead`` the
    sanctioned path, if any. The reason code is the machine half, stable across releases.
    """

    outcome: Outcome
    code: str | None = None
    operation: str | None = None
    why: str = ""
    instead: str = ""
    relay: str | None = None

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOW

    @classmethod
    def allow(cls, operation: str | None = None) -> Verdict:
        return cls(Outcome.ALLOW, operation=operation)

    @classmethod
    def deny(cls, code: str, why: str, *, operation: str | None = None, instead: str = "") -> Verdict:
        return cls(Outcome.DENY, code=code, operation=operation, why=why, instead=instead)


ALLOW = Verdict.allow()


def strictest(verdicts: list[Verdict]) -> Verdict:
    """The verdict to report for several operations: the first of the strictest outcome."""
    if not verdicts:
        return ALLOW
    worst = max(v.outcome for v in verdicts)
    return next(v for v in verdicts if v.outcome == worst)
