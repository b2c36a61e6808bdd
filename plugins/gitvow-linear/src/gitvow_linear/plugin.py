"""Entry point of the ``gitvow-linear`` distribution: registers the ``linear`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_linear.adapter import LinearAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(LinearAdapter())
