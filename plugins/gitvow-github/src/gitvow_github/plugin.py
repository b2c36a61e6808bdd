"""Entry point of the ``gitvow-github`` distribution: registers the ``github`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_github.adapter import GitHubAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GitHubAdapter())
