"""Entry point of the ``gitvow-gitea`` distribution: registers the ``gitea`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_gitea.adapter import GiteaAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GiteaAdapter())
