"""Entry point of the ``gitvow-bitbucket`` distribution: registers the ``bitbucket`` adapter."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow_bitbucket.adapter import BitbucketAdapter


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(BitbucketAdapter())
