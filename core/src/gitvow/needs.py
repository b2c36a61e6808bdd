"""What the engine asks of the enforcement point while it decides: needs, as values.

The engine is sans-IO, the way mitmproxy's proxy layers are: :meth:`gitvow.pipeline.Engine.judge`
is a generator that yields a *need* when a stage cannot go on without something from outside
(what the forge says an opaque id names, the state store's run-time flags, a write budget's
admission), is sent the answer, and returns the :class:`~gitvow.pipeline.Decision`. It never
does the I/O itself, never re-runs, and keeps nothing between decisions. Whoever drives it
answers the needs: the proxy off its event loop, ``gitvow explain`` and the agent gate with
"nothing known" (:func:`gitvow.pipeline.drive`).

The core defines the one need every forge shares (:class:`Lookup`); an enforcement point's
gates may yield needs of their own (the proxy's store needs, ``gitvow_proxy.needs``), which
pass through the engine untouched. An answer that is an exception is thrown into the stage
that asked (``generator.throw``), which judges it like any failure: a deny, never a forward.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from gitvow.request import Target

T = TypeVar("T")

#: A stage (or a part of one) that may yield needs before it returns a ``T``.
Step = Generator[object, Any, T]


@dataclass(frozen=True, slots=True)
class Lookup:
    """Ask the forge what ``targets`` are, through the request's adapter and host.

    Answered with a ``Mapping[Target, Resolution]``: a target left out (the forge did not say,
    the lookup failed) stays unresolved, and the gates refuse a write whose repository it
    leaves unknown (``repo_unresolved``). ``scope`` names the adapter and host
    (``github@ghes.example:443``): the same id on two hosts is two objects."""

    scope: str
    targets: tuple[Target, ...]


__all__ = ["Lookup", "Step"]
