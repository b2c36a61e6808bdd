"""Relay templates: one per sanctioned path, so every forge's relay denial reads the same.

The built-in relay is :data:`APPROVAL`, the default for ``pr.create`` and ``pr.merge``: the
proxy stages the exact refused request for a human, who approves or rejects it (``gitvow
approvals``, the approval desk); once approved the proxy sends it upstream, once. Operators
name their own sanctioned commands with ``[relays.NAME]``; those are plain relays (the agent
is told to use the command instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitvow.hookspecs import hookimpl

#: The reason code of a staged request whose approval expired unanswered.
APPROVAL_EXPIRED = "approval_expired"
#: The reason code of a staged request a human rejected.
APPROVAL_REJECTED = "approval_rejected"
#: The reason code of an approved merge or creation not sent because its head moved after the
#: human saw it: it is staged anew with what the forge says now.
APPROVAL_HEAD_MOVED = "approval_head_moved"


@dataclass(frozen=True, slots=True)
class RelayTemplate:
    """A sanctioned path: ``usage`` is shown verbatim after "use".

    ``staged`` relays are answered by the enforcement point itself: the refused request is
    kept for a human to approve (the proxy), rather than the agent being sent elsewhere."""

    command: str
    usage: str
    what: str
    staged: bool = False

    def instead(self, hints: tuple[str, ...] = ()) -> str:
        text = f"use `{self.usage}`"
        if hints:
            text += "; do not use " + ", ".join(hints)
        return text


APPROVAL = RelayTemplate("approval", "gitvow approvals wait ID", "this request", staged=True)


@hookimpl
def register_relays(register: Callable[[RelayTemplate], None]) -> None:
    """The built-in approval relay, registered like any plugin's."""
    register(APPROVAL)
