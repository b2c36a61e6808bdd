"""The plugin hooks of gitvow. Each registers things; pluggy calls every implementation.

Built-in pieces (the inference adapter) register through these hooks exactly like
third-party plugins, found through the ``gitvow`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from gitvow.adapter import Adapter
    from gitvow.relay import RelayTemplate

PROJECT = "gitvow"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register forge adapters (hosts, classification, fixtures, credentials, tool calls)."""


@hookspec
def register_relays(register: Callable[[RelayTemplate], None]) -> None:
    """Register relay templates: the sanctioned command a relayed operation names."""
