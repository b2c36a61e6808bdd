"""Entry point of the ``gitvow-gitsmart`` distribution: registers the ``gitsmart`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_gitsmart.adapter import GitSmartAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GitSmartAdapter())
