"""Plugin discovery and the typed facade over pluggy, so no caller touches ``pm.hook``.

Built-in plugins are registered from :data:`BUILTIN_PLUGINS`, in code, exactly as external
ones; external plugins are modules named by entry points in the ``gitvow`` group (the forge
adapters, ``gitvow-proxy``, ``gitvow-gate``). Loading follows pluggy's rules:

- hook implementations run in pluggy's call order (``tryfirst``/``trylast`` honoured), each
  on its own, so one that raises is recorded by plugin name and the others still register;
- ``check_pending`` runs after loading: an implementation whose name matches no hook (a
  misspelling) is a failure of its plugin, which is then unregistered;
- ``GITVOW_DISABLE_PLUGINS`` (comma- or space-separated entry-point or distribution names)
  blocks plugins before they are imported, as tox's ``TOX_DISABLED_EXTERNAL_PLUGINS`` does.

Registrations are collected per hook on first use, and each facade property is computed
once (a refused registration is one failure, however often it is read), so the agent hook,
which needs adapters only, never imports what a policy section would (pydantic).
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import pluggy

from gitvow import __version__, hookspecs
from gitvow.adapter import Adapter
from gitvow.cli.command import CORE_COMMANDS, Command
from gitvow.errors import PluginError
from gitvow.policy.sections import PolicySection
from gitvow.relay import RelayTemplate

ENTRY_POINT_GROUP = "gitvow"
DISABLE_ENV = "GITVOW_DISABLE_PLUGINS"
#: The core's own plugins (name, module), registered in code like llm's and datasette's defaults.
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (("inference", "gitvow.adapters.inference"), ("relays", "gitvow.relay"))


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A loaded plugin: its name, distribution, version and the adapters it registered."""

    name: str
    distribution: str | None
    version: str | None
    adapters: tuple[str, ...] = ()


def disabled_names(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """Names blocked by ``GITVOW_DISABLE_PLUGINS``."""
    raw = (os.environ if env is None else env).get(DISABLE_ENV, "")
    return frozenset(name for name in raw.replace(",", " ").split() if name)


class Plugins:
    """The registered plugins: adapters, relay templates, policy sections, commands, and who failed."""

    def __init__(self, pm: pluggy.PluginManager, sources: Mapping[str, tuple[str | None, str | None]],
                 failures: Iterable[PluginError] = (), disabled: Iterable[str] = ()) -> None:
        self._pm = pm
        self._sources = dict(sources)
        self._failures: list[PluginError] = list(failures)
        self._collected: dict[str, list[tuple[str, object]]] = {}
        self.disabled: tuple[str, ...] = tuple(sorted(disabled))
        self._adapters: dict[str, Adapter] | None = None
        self._relays: dict[str, RelayTemplate] | None = None
        self._sections: tuple[PolicySection, ...] | None = None
        self._commands: dict[str, Command] | None = None
        self.adapter_plugin: dict[str, str] = {}
        self.command_plugin: dict[str, str] = {}

    @classmethod
    def of(
        cls,
        *,
        adapters: Iterable[Adapter] = (),
        relays: Iterable[RelayTemplate] = (),
        sections: Iterable[PolicySection] = (),
        commands: Iterable[Command] = (),
        plugin: str = "given",
    ) -> Plugins:
        """Registrations given directly, as if one plugin named ``plugin`` had made them (tests, the kit)."""
        found = cls(_plugin_manager(), {})
        found._collected = {
            "register_adapters": [(plugin, item) for item in adapters],
            "register_relays": [(plugin, item) for item in relays],
            "register_policy_sections": [(plugin, item) for item in sections],
            "register_commands": [(plugin, item) for item in commands],
        }
        return found

    # -- the typed facade ------------------------------------------------------------------

    @property
    def adapters(self) -> dict[str, Adapter]:
        """Adapters by name; a second adapter of the same name is refused and its plugin named."""
        if self._adapters is None:
            adapters: dict[str, Adapter] = {}
            for plugin, item in self._collect("register_adapters", Adapter):
                if not isinstance(item, Adapter):
                    raise TypeError("internal error: item is not Adapter")
                if item.name in adapters:
                    owner = self.adapter_plugin[item.name]
                    self._failures.append(PluginError(plugin, f"adapter {item.name!r} is already registered by {owner!r}"))
                    continue
                adapters[item.name] = item
                self.adapter_plugin[item.name] = plugin
            self._adapters = adapters
        return self._adapters

    @property
    def relays(self) -> dict[str, RelayTemplate]:
        """Relay templates by command; the first registration of a command wins."""
        if self._relays is None:
            relays: dict[str, RelayTemplate] = {}
            for _plugin, item in self._collect("register_relays", RelayTemplate):
                if not isinstance(item, RelayTemplate):
                    raise TypeError("internal error: item is not RelayTemplate")
                relays.setdefault(item.command, item)
            self._relays = relays
        return self._relays

    @property
    def sections(self) -> tuple[PolicySection, ...]:
        """Policy-file sections; a key claimed twice, or by the core, fails the later plugin."""
        if self._sections is None:
            from gitvow.policy.model import CorePolicy

            owners: dict[str, str] = dict.fromkeys(CorePolicy.model_fields, "the core")
            found: list[PolicySection] = []
            for plugin, item in self._collect("register_policy_sections", PolicySection):
                if not isinstance(item, PolicySection):
                    raise TypeError("internal error: item is not PolicySection")
                taken = [key for key in item.keys if key in owners]
                if taken:
                    self._failures.append(PluginError(plugin, f"policy key {taken[0]!r} is already read by "
                                                              f"{owners[taken[0]]}"))
                    continue
                owners.update(dict.fromkeys(item.keys, plugin))
                found.append(item)
            self._sections = tuple(found)
        return self._sections

    @property
    def commands(self) -> dict[str, Command]:
        """Commands plugins add to ``gitvow``; a name the core or an earlier plugin took fails the later plugin."""
        if self._commands is None:
            owners: dict[str, str] = {command.name: "the core" for command in CORE_COMMANDS}
            commands: dict[str, Command] = {}
            for plugin, item in self._collect("register_commands", Command):
                if not isinstance(item, Command):
                    raise TypeError("internal error: item is not Command")
                if item.name in owners:
                    self._failures.append(PluginError(plugin, f"command {item.name!r} is already added by "
                                                              f"{owners[item.name]}"))
                    continue
                owners[item.name] = plugin
                commands[item.name] = item
                self.command_plugin[item.name] = plugin
            self._commands = commands
        return self._commands

    def distribution_of(self, plugin: str) -> str | None:
        """The distribution a loaded plugin came from (None for plugins given in code)."""
        return self._sources.get(plugin, (None, None))[0]

    @property
    def failures(self) -> list[PluginError]:
        """Plugins that failed to load, validate or register, each named (adapters are collected first)."""
        self.adapters  # noqa: B018 - registering adapters is where most failures show
        return self._failures

    def adapter(self, name: str) -> Adapter:
        try:
            return self.adapters[name]
        except KeyError:
            known = ", ".join(sorted(self.adapters)) or "none"
            raise PluginError(name, f"no such adapter is installed (installed: {known})") from None

    @property
    def infos(self) -> list[PluginInfo]:
        adapters = self.adapters
        by_plugin: dict[str, list[str]] = {}
        for name in adapters:
            by_plugin.setdefault(self.adapter_plugin[name], []).append(name)
        return [PluginInfo(name, dist, version, tuple(by_plugin.get(name, ())))
                for name, (dist, version) in self._sources.items() if self._pm.has_plugin(name)]

    # -- pluggy ----------------------------------------------------------------------------

    def _collect(self, hook_name: str, kind: type) -> list[tuple[str, object]]:
        """Call every implementation of a register-style hook, in pluggy's order, each alone."""
        if hook_name in self._collected:
            return self._collected[hook_name]
        items: list[tuple[str, object]] = []
        hook: pluggy.HookCaller = getattr(self._pm.hook, hook_name)
        # get_hookimpls() lists implementations in reverse call order (pluggy calls LIFO,
        # tryfirst ones first): reversed, it is the order ``pm.hook`` itself would use.
        for impl in reversed(hook.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                self._failures.append(PluginError(impl.plugin_name, f"{hook_name} is a register hook; wrappers are not supported"))
                continue

            def register(item: object, _plugin: str = impl.plugin_name) -> None:
                if not isinstance(item, kind):
                    raise TypeError(f"{hook_name} got {type(item).__name__}, expected a {kind.__module__}.{kind.__name__}")
                items.append((_plugin, item))

            mark = len(items)
            try:
                impl.function(register=register)
            except Exception as exc:
                del items[mark:]  # all or nothing per plugin: a half-registered plugin is not trusted
                self._failures.append(PluginError(impl.plugin_name, f"{hook_name} raised {type(exc).__name__}: {exc}"))
        self._collected[hook_name] = items
        return items


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, reading :mod:`gitvow.hookspecs`' pluggy-free markers as pluggy's own."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        return opts if opts is not None else _pluggy_opts(plugin, name, hookspecs.IMPL_MARK,
                                                          pluggy.HookimplMarker(self.project_name))

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
        opts = super().parse_hookspec_opts(module_or_class, name)
        return opts if opts is not None else _pluggy_opts(module_or_class, name, hookspecs.SPEC_MARK,
                                                          pluggy.HookspecMarker(self.project_name))


def _pluggy_opts(holder: Any, name: str, attribute: str, marker: Any) -> Any:
    """The options pluggy's ``marker`` would have set, for a function marked by ours."""
    import inspect

    try:
        found = inspect.getattr_static(holder, name)
    except AttributeError:
        return None
    function = getattr(found, "__func__", found)
    options = getattr(function, attribute, None)
    if not isinstance(options, dict) or not callable(function):
        return None

    def stand_in() -> None:
        """Carries pluggy's options for ``function``."""

    marker(stand_in, **options)
    return getattr(stand_in, f"{marker.project_name}_{'impl' if attribute == hookspecs.IMPL_MARK else 'spec'}", None)


def _plugin_manager() -> pluggy.PluginManager:
    pm = _PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def _same(plugin: object) -> object:
    return plugin


def load(
    *,
    entry_points: bool = True,
    builtins: bool = True,
    extra: Iterable[tuple[str, object]] = (),
    env: Mapping[str, str] | None = None,
) -> Plugins:
    """Register the built-in plugins, then entry points, then ``extra`` as ``(name, plugin)``."""
    pm = _plugin_manager()
    disabled = disabled_names(env)
    failures: list[PluginError] = []
    sources: dict[str, tuple[str | None, str | None]] = {}
    skipped: set[str] = set()

    def add(name: str, dist: tuple[str | None, str | None], load_plugin: Callable[[], Any]) -> None:
        if name in disabled or (dist[0] is not None and dist[0] in disabled):
            pm.set_blocked(name)
            skipped.add(name)
            return
        try:
            pm.register(load_plugin(), name=name)
        except Exception as exc:  # a broken plugin must not take the others down
            failures.append(PluginError(name, f"failed to load: {type(exc).__name__}: {exc}"))
            return
        sources[name] = dist

    if builtins:
        core = ("gitvow", __version__)
        for name, module in BUILTIN_PLUGINS:
            add(name, core, partial(importlib.import_module, module))
    if entry_points:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = (ep.dist.name, ep.dist.version) if ep.dist else (None, None)
            add(ep.name, dist, ep.load)
    for name, plugin in extra:
        add(name, (None, None), partial(_same, plugin))
    _check_pending(pm, failures, sources)
    return Plugins(pm, sources, failures, skipped)


def _check_pending(pm: pluggy.PluginManager, failures: list[PluginError],
                   sources: dict[str, tuple[str | None, str | None]]) -> None:
    """Unregister, and report by name, every plugin with an implementation of no known hook."""
    while True:
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin) or repr(exc.plugin)
            failures.append(PluginError(name, f"{exc} (a misspelled hook name?)"))
            pm.unregister(exc.plugin)
            sources.pop(name, None)
            continue
        return


@cache
def installed() -> Plugins:
    """The plugins installed in this environment, discovered once per process."""
    return load()
