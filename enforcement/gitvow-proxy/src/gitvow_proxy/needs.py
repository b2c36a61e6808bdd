"""The proxy's own needs: what its gates ask of the state store while the engine decides.

They pass through the engine untouched (:mod:`gitvow.needs`) and are answered by whoever
drives it: the enforcement addon off mitmproxy's event loop
(:class:`gitvow_proxy.answers.Answers`), or :meth:`gitvow_proxy.gates.ProxyGates.answer` for a
caller that decides synchronously (replay, tests). A store that cannot be reached is thrown
into the gate that asked, as :class:`~gitvow_proxy.store.StoreUnavailable`: it refuses the
write with ``state_unavailable``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitvow_proxy.store import Flags


@dataclass(frozen=True, slots=True)
class ReadFlags:
    """The store's run-time flags (pauses, merges switched off). Answered with :class:`SeenFlags`.

    ``confirmable``: this write takes from a budget, and its admission (:class:`Admit`) will
    tell whether the flags changed in the round trip that takes it; so the flags read last may
    answer, unconfirmed, and spare the store a round trip."""

    confirmable: bool = False


@dataclass(frozen=True, slots=True)
class SeenFlags:
    """The answer to :class:`ReadFlags`: the flags, and whether they were read for this decision."""

    flags: Flags
    confirmed: bool = True


@dataclass(frozen=True, slots=True)
class Admit:
    """Take ``amounts`` from the budget windows ``keys`` (each ``(key, limit)``) at ``now``.

    Answered with a :class:`~gitvow_proxy.store.Admission`: taken (``wait`` None), no room
    (``wait`` seconds), or, when the flags this decision was answered with unconfirmed are no
    longer the store's, nothing taken and the store's ``flags``."""

    keys: tuple[tuple[str, int], ...]
    amounts: tuple[int, ...]
    now: float
    window: float


__all__ = ["Admit", "ReadFlags", "SeenFlags"]
