"""Which module serves each fast command, cached, so ``gitvow hook`` needs no plugin discovery.

Plugins add commands through ``register_commands``, and finding them means discovering
every plugin (``importlib.metadata`` over every installed distribution, pluggy, each plugin
module): hundreds of milliseconds, more than an agent hook may take. A command that declares
itself ``fast`` is therefore written here once discovery found it, and later calls import its
module directly. The index is keyed as the agent gate's plugin index is: each ``sys.path``
directory (after the script's own) with its modification time (installing or removing a
distribution changes it), the Python version and ``GITVOW_DISABLE_PLUGINS``; any doubt (a
stale key, an unreadable file, a module that no longer imports) falls back to discovery.

It lives in ``$GITVOW_CACHE_DIR`` or ``$XDG_CACHE_HOME/gitvow`` (``~/.cache/gitvow``), and is
written only when a fast command ran, so other commands never touch the cache.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Iterable, Mapping

from gitvow.cli.command import Command

#: Bumped whenever the index's form changes.
INDEX_SCHEMA = 1


def key(env: Mapping[str, str]) -> str:
    """What the index depends on: the import path's directories and their mtimes, cheap to stat."""
    parts = [f"{INDEX_SCHEMA}", sys.version, env.get("GITVOW_DISABLE_PLUGINS", "")]
    for entry in sys.path[1:]:  # sys.path[0] is the script's directory: nothing is installed there
        try:
            parts.append(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}\0-")
    text = "\n".join(parts).encode()
    return f"{zlib.crc32(text):08x}-{len(text)}"


def path(env: Mapping[str, str]) -> str:
    if env.get("GITVOW_CACHE_DIR"):
        return os.path.join(env["GITVOW_CACHE_DIR"], "commands.json")
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gitvow", "commands.json")


def lookup(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The module of fast command ``name``, if the index for this environment names it."""
    env = os.environ if env is None else env
    try:
        with open(path(env), encoding="utf-8") as fh:
            index = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("key") != key(env):
        return None
    module = index.get("commands", {}).get(name)
    return module if isinstance(module, str) else None


def remember(commands: Iterable[Command], env: Mapping[str, str] | None = None) -> None:
    """Write the index of every fast command among ``commands`` (best effort)."""
    env = os.environ if env is None else env
    index = {"key": key(env), "commands": {c.name: c.module for c in commands if c.fast}}
    target = path(env)
    try:
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(index, fh)
        os.replace(tmp, target)
    except OSError:
        pass  # an index that cannot be written costs speed, never correctness
