"""Which adapter serves a host: adapter defaults, then the policy's ``[hosts]`` table.

Lookup tries ``host:port`` first, then the bare host, so a GitHub Enterprise test server on
``127.0.0.1:8443`` and ``github.example.com`` are configured the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitvow.adapter import Adapter
from gitvow.errors import PolicyError


class HostRegistry:
    """host (or host:port) → adapter."""

    __slots__ = ("_adapters", "_hosts")

    def __init__(
        self,
        adapters: Mapping[str, Adapter],
        configured: Mapping[str, str] | None = None,
        *,
        source: str | None = None,
    ) -> None:
        self._adapters = dict(adapters)
        hosts: dict[str, Adapter] = {}
        for adapter in adapters.values():
            for host in adapter.default_hosts:
                hosts.setdefault(host.lower(), adapter)
        for host, name in (configured or {}).items():
            if name not in adapters:
                known = ", ".join(sorted(adapters)) or "none installed"
                raise PolicyError(
                    f"adapter {name!r} is not installed; expected one of: {known}", source=source, key=f"hosts.{host!r}"
                )
            hosts[host.lower()] = adapters[name]
        self._hosts = hosts

    def lookup(self, host: str, port: int | None = None) -> Adapter | None:
        host = host.lower()
        if port is not None:
            adapter = self._hosts.get(f"{host}:{port}")
            if adapter is not None:
                return adapter
        return self._hosts.get(host)

    def intercepts(self, host: str, port: int | None = None) -> bool:
        """Whether TLS to this host must be intercepted (an adapter serves it and asks for it)."""
        adapter = self.lookup(host, port)
        return adapter is not None and adapter.intercepts(host)

    def items(self) -> list[tuple[str, str]]:
        return sorted((host, adapter.name) for host, adapter in self._hosts.items())
