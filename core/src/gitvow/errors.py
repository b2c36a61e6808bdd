"""The few exception types gitvow raises, each carrying the context a user needs to act."""

from __future__ import annotations


class GitvowError(Exception):
    """Base of every error gitvow reports to a user."""


class PolicyError(GitvowError):
    """A policy file or table that cannot be used: names the file, the key path and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.source = source
        self.key = key
        where = ": ".join(part for part in (source, key) if part)
        super().__init__(f"{where}: {message}" if where else message)


class PluginError(GitvowError):
    """A plugin that failed to load or raised: names the plugin (entry point or adapter)."""

    def __init__(self, plugin: str, message: str) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {message}")
