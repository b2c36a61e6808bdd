"""The mode ladder and the capabilities that OR-grant single operations past it."""

from __future__ import annotations

from enum import IntEnum


class Mode(IntEnum):
    """How much an agent may change, lowest first; comparisons follow the ladder."""

    ADVISORY = 0
    ISSUES_ONLY = 1
    ISSUES_AND_PRS = 2
    ISSUES_PRS_MERGE = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | Mode) -> Mode:
        """Accept the policy spelling (``issues_and_prs``); raise ValueError naming the choices."""
        if isinstance(value, Mode):
            return value
        try:
            return cls[value.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown mode {value!r}; expected one of {', '.join(MODE_NAMES)}") from None


MODE_NAMES: tuple[str, ...] = tuple(mode.label for mode in Mode)

#: Capabilities known to the default table. ``converse`` lets an agent talk (comment, review)
#: below the mode that would otherwise be needed.
CONVERSE = "converse"
CAPABILITIES: frozenset[str] = frozenset({CONVERSE})
