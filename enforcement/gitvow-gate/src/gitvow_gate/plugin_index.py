"""Which plugin serves which program, cached, so a forge command loads one adapter and no discovery.

Discovering plugins (``importlib.metadata`` over every installed distribution, pluggy, every
adapter module) costs more than the rest of a hook call together, and a ``gh pr merge``
needs only the GitHub adapter. So the first forge call discovers everything once, through
:func:`gitvow.plugins.installed`, and writes an index: for each adapter its plugin, the module
that registers it and the programs it classifies (``Adapter.commands``), plus the relay
templates as plain data. Later calls read the index and import only the plugin module the
command's program needs, calling its ``register_adapters`` hook implementation directly.
The programs of every adapter (:func:`programs`) are also what the forge stage looks for in
a shell command at all: a plugin's ``commands`` are the only list of forge programs.

The index is keyed on the import path: each ``sys.path`` directory (after the script's own)
with its modification time
(installing, upgrading or removing a distribution adds or removes a ``*.dist-info`` entry in
it, which changes the directory's mtime), the Python version and ``GITVOW_DISABLE_PLUGINS``.
A changed key rebuilds the index; so does any doubt (an unreadable entry, a plugin that
failed, a module that no longer registers the adapter), by falling back to full discovery.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from gitvow.adapter import Adapter
    from gitvow.relay import RelayTemplate

#: Bumped whenever the index's form changes.
INDEX_SCHEMA = 2
#: The ``commands`` of an adapter that classifies commands but does not name its programs.
ANY = "*"


@dataclass(frozen=True, slots=True)
class Loaded:
    """The adapters a call needs and the relay templates, or ``failure`` naming a broken plugin."""

    adapters: Mapping[str, Adapter]
    relays: Mapping[str, RelayTemplate]
    failure: str = ""


def key(env: Mapping[str, str]) -> str:
    """What the index depends on: the import path's directories and their mtimes, cheap to stat."""
    parts = [f"{INDEX_SCHEMA}", sys.version, env.get("GITVOW_DISABLE_PLUGINS", "")]
    # sys.path[0] is the running script's directory (the virtualenv's bin/, or the working
    # directory for `python -c`): distributions are not installed there, and a directory such
    # as /tmp changes all the time
    for entry in sys.path[1:]:
        try:
            parts.append(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}\0-")
    text = "\n".join(parts).encode()
    return f"{zlib.crc32(text):08x}-{len(text)}"


def _path(env: Mapping[str, str]) -> str:
    from gitvow_gate.gate_policy import cache_dir

    return os.path.join(cache_dir(env), "plugins.json")


#: The index last read or built in this process, with its path: a warm process (the resident
#: gate) reads the file again only when the key moved.
_last: tuple[str, dict[str, Any]] | None = None


def read(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The index for this environment as it is now, or None when there is none or it is stale."""
    global _last
    path, now = _path(env), key(env)
    if _last is not None and _last[0] == path and _last[1].get("key") == now:
        return _last[1]
    try:
        with open(path, encoding="utf-8") as fh:
            index: dict[str, Any] = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("key") != now:
        return None
    _last = (path, index)
    return index


def current(env: Mapping[str, str]) -> dict[str, Any]:
    """The index for this environment: read, or built by full discovery when there is none."""
    return read(env) or build(env)


def programs(env: Mapping[str, str]) -> frozenset[str] | None:
    """Every program some installed adapter reads (its ``commands``): what the gate's forge
    stage looks at, so a third party's ``commands = ("bb",)`` reaches it. None when a plugin
    failed to load: its programs are unknown, so any program may be one of them."""
    index = current(env)
    if index.get("failures"):
        return None
    return frozenset(program for entry in index["adapters"].values() for program in entry["commands"]
                     if program != ANY)


def build(env: Mapping[str, str]) -> dict[str, Any]:
    """Discover every plugin (the slow path) and write the index; returns it."""
    from gitvow.plugins import installed

    plugins = installed()
    adapters = plugins.adapters
    sources = {info.name: info for info in plugins.infos}
    from gitvow.adapter import Adapter

    entries: dict[str, Any] = {}
    for name, adapter in adapters.items():
        plugin = plugins.adapter_plugin.get(name, "")
        commands = sorted(getattr(adapter, "commands", ()) or ())
        if not commands and type(adapter).classify_command is not Adapter.classify_command:
            commands = [ANY]  # reads commands without saying which: loaded for every one
        entries[name] = {
            "plugin": plugin,
            "module": _module_of(plugins, plugin) or type(adapter).__module__,
            "commands": commands,
            "distribution": sources[plugin].distribution if plugin in sources else None,
        }
    index = {
        "key": key(env),
        "adapters": entries,
        "relays": [[r.command, r.usage, r.what, r.staged] for r in plugins.relays.values()],
        "failures": [str(f) for f in plugins.failures],
    }
    path = _path(env)
    global _last
    _last = (path, index)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(index, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # an index that cannot be written costs speed, never correctness
    return index


def _module_of(plugins: Any, plugin: str) -> str | None:
    """The module registered as ``plugin`` (an entry point's target, or a built-in's module)."""
    manager = getattr(plugins, "_pm", None)
    registered = manager.get_plugin(plugin) if manager is not None else None
    name = getattr(registered, "__name__", None)
    return name if isinstance(name, str) else None


def for_programs(programs: set[str], env: Mapping[str, str]) -> Loaded | None:
    """The adapters that classify ``programs``, loaded alone; None when only full discovery can say."""
    index = current(env)
    if index.get("failures"):
        return None  # let full discovery report the broken plugin, by name
    wanted = {name: entry for name, entry in index["adapters"].items()
              if programs & set(entry["commands"]) or ANY in entry["commands"]}
    from gitvow.relay import RelayTemplate

    relays = {command: RelayTemplate(command, usage, what, bool(staged)) for command, usage, what, staged in index["relays"]}
    adapters: dict[str, Adapter] = {}
    for name, entry in wanted.items():
        try:
            adapter = _load(entry["module"], name)
        except Exception:
            return None  # full discovery names the plugin that broke
        if adapter is None:
            return None
        adapters[name] = adapter
    return Loaded(adapters, relays)


def _load(module_name: str, name: str) -> Adapter | None:
    """Import one plugin module and call its ``register_adapters``; the adapter named ``name``, or None."""
    from gitvow.adapter import Adapter

    __import__(module_name)  # not importlib.import_module: importlib (and warnings) cost the hook
    module = sys.modules[module_name]
    register_adapters = getattr(module, "register_adapters", None)
    if register_adapters is None:
        return None
    found: list[Adapter] = []

    def register(item: object) -> None:
        if isinstance(item, Adapter):
            found.append(item)

    register_adapters(register=register)
    return next((a for a in found if a.name == name), None)
