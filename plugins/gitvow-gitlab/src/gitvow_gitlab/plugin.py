"""Entry point of the ``gitvow-gitlab`` distribution: registers the ``gitlab`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_gitlab.adapter import GitLabAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(GitLabAdapter())
