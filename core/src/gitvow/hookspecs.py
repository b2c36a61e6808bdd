"""The plugin hooks of gitvow. Each registers things; pluggy calls every implementation.

Built-in pieces (the inference adapter, the seed's relays) register through these hooks
exactly like third-party plugins; they are listed in :data:`gitvow.plugins.BUILTIN_PLUGINS`,
third parties are found through the ``gitvow`` entry-point group. Callers never touch
``pm.hook``: :mod:`gitvow.plugins` is the typed facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from gitvow.adapter import Adapter
    from gitvow.policy.sections import PolicySection
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


@hookspec
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """Register top-level sections of the policy file this plugin reads, each a pydantic model."""
