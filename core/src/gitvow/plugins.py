"""Plugin discovery and the typed facade over pluggy, so no caller touches ``pm.hook``.

Plugins are modules (or objects) named by entry points in the ``gitvow`` group. Each is
loaded and each of its hook implementations is called on its own: a plugin that fails to
import or raises while registering is recorded by name in :attr:`Plugins.failures` and the
others still load.
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

import pluggy

from gitvow import hookspecs
from gitvow.adapter import Adapter
from gitvow.errors import PluginError
from gitvow.relay import RelayTemplate

ENTRY_POINT_GROUP = "gitvow"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A loaded plugin: its entry-point name, distribution, version and what it registered."""

    name: str
    distribution: str | None
    version: str | None
    adapters: tuple[str, ...] = ()


@dataclass(slots=True)
class Plugins:
    """Everything the plugins registered: adapters, relay templates, and who failed."""

    adapters: dict[str, Adapter] = field(default_factory=dict)
    relays: dict[str, RelayTemplate] = field(default_factory=dict)
    infos: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginError] = field(default_factory=list)
    adapter_plugin: dict[str, str] = field(default_factory=dict)

    def adapter(self, name: str) -> Adapter:
        try:
            return self.adapters[name]
        except KeyError:
            known = ", ".join(sorted(self.adapters)) or "none"
            raise PluginError(name, f"no such adapter is installed (installed: {known})") from None


def _plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def load(
    *,
    entry_points: bool = True,
    extra: Iterable[tuple[str, object]] = (),
) -> Plugins:
    """Discover plugins (entry points, then ``extra`` as ``(name, plugin)``) and collect registrations."""
    pm = _plugin_manager()
    result = Plugins()
    sources: dict[str, tuple[str | None, str | None]] = {}
    if entry_points:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not take the others down
                result.failures.append(PluginError(ep.name, f"failed to load {ep.value}: {type(exc).__name__}: {exc}"))
                continue
            sources[ep.name] = (dist.name if dist else None, dist.version if dist else None)
    for name, plugin in extra:
        try:
            pm.register(plugin, name=name)
        except Exception as exc:
            result.failures.append(PluginError(name, f"failed to register: {exc}"))
            continue
        sources[name] = (None, None)

    registered: dict[str, list[str]] = {name: [] for name in sources}

    def collect(hook: pluggy.HookCaller, accept: Callable[[str, object], None]) -> None:
        for impl in hook.get_hookimpls():  # registration order
            def register(item: object, _plugin: str = impl.plugin_name) -> None:
                accept(_plugin, item)

            try:
                impl.function(register=register)
            except Exception as exc:
                result.failures.append(PluginError(impl.plugin_name, f"{hook.name} raised {type(exc).__name__}: {exc}"))

    def accept_adapter(plugin: str, item: object) -> None:
        if not isinstance(item, Adapter):
            raise TypeError(f"register_adapters got {type(item).__name__}, expected a gitvow.adapter.Adapter")
        if item.name in result.adapters:
            owner = result.adapter_plugin[item.name]
            result.failures.append(PluginError(plugin, f"adapter {item.name!r} is already registered by {owner!r}"))
            return
        result.adapters[item.name] = item
        result.adapter_plugin[item.name] = plugin
        registered.setdefault(plugin, []).append(item.name)

    def accept_relay(plugin: str, item: object) -> None:
        if not isinstance(item, RelayTemplate):
            raise TypeError(f"register_relays got {type(item).__name__}, expected a gitvow.relay.RelayTemplate")
        result.relays.setdefault(item.command, item)

    collect(pm.hook.register_adapters, accept_adapter)
    collect(pm.hook.register_relays, accept_relay)
    for name, (dist_name, version) in sources.items():
        result.infos.append(PluginInfo(name, dist_name, version, tuple(registered.get(name, ()))))
    return result


@cache
def installed() -> Plugins:
    """The plugins installed in this environment, discovered once per process."""
    return load()
