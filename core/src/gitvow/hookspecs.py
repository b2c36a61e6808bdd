"""The plugin hooks of gitvow. Each registers things; pluggy calls every implementation.

Built-in pieces (the inference adapter, the built-in ``approval`` relay) register through these hooks
exactly like third-party plugins; they are listed in :data:`gitvow.plugins.BUILTIN_PLUGINS`,
third parties are found through the ``gitvow`` entry-point group. Callers never touch
``pm.hook``: :mod:`gitvow.plugins` is the typed facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TypeVar

    from gitvow.adapter import Adapter
    from gitvow.cli.command import Command
    from gitvow.policy.sections import PolicySection
    from gitvow.relay import RelayTemplate

    F = TypeVar("F", bound=Callable[..., Any])

PROJECT = "gitvow"
#: Attributes the markers below set: the options given, read by :mod:`gitvow.plugins`'
#: plugin manager, which hands them to pluggy's own markers.
IMPL_MARK = "gitvow_hookimpl"
SPEC_MARK = "gitvow_hookspec"

class Marker:
    """``@hookimpl`` / ``@hookimpl(tryfirst=True)`` without importing pluggy.

    Every plugin module imports :data:`hookimpl`, and the agent gate imports one plugin module
    on a forge command: pluggy (and the ``inspect`` it pulls in) would cost that hook call
    more than the adapter. The marker only records its options; the plugin manager of
    :mod:`gitvow.plugins` turns them into pluggy's (``parse_hookimpl_opts``, pluggy's
    documented extension point), so pluggy's rules apply unchanged. ``pluggy.HookimplMarker
    ("gitvow")`` keeps working for plugins that use it directly.
    """

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __call__(self, function: F | None = None, **options: Any) -> Any:
        def mark(func: F) -> F:
            setattr(func, self.attribute, dict(options))
            return func

        return mark(function) if function is not None else mark


hookspec = Marker(SPEC_MARK)
hookimpl = Marker(IMPL_MARK)


@hookspec
def register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register forge adapters (hosts, classification, fixtures, credentials, tool calls)."""


@hookspec
def register_relays(register: Callable[[RelayTemplate], None]) -> None:
    """Register relay templates: the sanctioned command a relayed operation names."""


@hookspec
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """Register top-level sections of the policy file this plugin reads, each a pydantic model."""


@hookspec
def register_commands(register: Callable[[Command], None]) -> None:
    """Register subcommands of the ``gitvow`` command line, each named by the module that implements it."""
