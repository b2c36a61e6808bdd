"""Relay templates: one per sanctioned command, so every forge's relay denial reads the same."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitvow.hookspecs import hookimpl


@dataclass(frozen=True, slots=True)
class RelayTemplate:
    """A sanctioned path: ``usage`` is shown verbatim after "use"."""

    command: str
    usage: str
    what: str

    def instead(self, hints: tuple[str, ...] = ()) -> str:
        text = f"use `{self.usage}`"
        if hints:
            text += "; do not use " + ", ".join(hints)
        return text


OPEN_PR = RelayTemplate("hive-open-pr", "hive-open-pr --title TITLE --body-file FILE", "opening a pull request")
MERGE = RelayTemplate("hive-merge", "hive-merge PR_NUMBER", "merging a pull request")


@hookimpl
def register_relays(register: Callable[[RelayTemplate], None]) -> None:
    """The seed's two relays, registered like any plugin's."""
    for template in (OPEN_PR, MERGE):
        register(template)
