"""Which adapter serves a host: adapter defaults, then the policy's ``[hosts]`` table.

Lookup tries ``host:port`` first, then the bare host, so a GitHub Enterprise test server on
``127.0.0.1:8443`` and ``github.example.com`` are configured the same way.

MCP endpoints (``[mcp.NAME]``, :mod:`gitvow.adapters.mcp`) are served by path: a request under
an endpoint's prefix goes to it ahead of the host's adapter (GitHub's hosted MCP server ahead
of the inference adapter on ``api.githubcopilot.com``), and a host no other adapter serves is
the endpoint's, so what is outside its prefix is still classified (``unknown``), never tunnelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitvow.adapter import Adapter
from gitvow.errors import PolicyError

if TYPE_CHECKING:
    from gitvow.adapters.mcp import McpAdapter
    from gitvow.request import Request


class HostRegistry:
    """host (or host:port) → adapter."""

    __slots__ = ("_adapters", "_hosts", "_mcp", "_mcp_at")

    def __init__(
        self,
        adapters: Mapping[str, Adapter],
        configured: Mapping[str, str] | None = None,
        *,
        source: str | None = None,
        mcp: Sequence[McpAdapter] = (),
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
        for endpoint in mcp:
            where = endpoint.endpoint
            if where.host not in hosts:  # the host's own adapter keeps what is outside the prefix
                hosts.setdefault(f"{where.host}:{where.port}", endpoint)
        self._hosts = hosts
        # longest prefix first, so a narrower endpoint on the same host wins
        self._mcp = sorted(mcp, key=lambda a: len(a.endpoint.prefix), reverse=True)
        #: The endpoints of each (host, port), longest prefix first: a request is compared with
        #: those of its own host only (:meth:`McpEndpoint.serves` requires the host and port).
        self._mcp_at: dict[tuple[str, int], tuple[McpAdapter, ...]] = {}
        for endpoint in self._mcp:
            at = (endpoint.endpoint.host, endpoint.endpoint.port)
            self._mcp_at[at] = (*self._mcp_at.get(at, ()), endpoint)

    def has_mcp_at(self, host: str, port: int) -> bool:
        """Whether an MCP endpoint is served at ``host`` (lower-case) and ``port``: where none
        is, :meth:`route` is :meth:`lookup` for every path (an endpoint serves only its own
        host and port)."""
        return (host, port) in self._mcp_at

    def route(self, request: Request) -> Adapter | None:
        """The adapter serving ``request``: an MCP endpoint whose prefix it is under, else the host's."""
        for endpoint in self._mcp_at.get((request.host, request.port), ()):
            if endpoint.endpoint.serves(request):
                return endpoint
        return self.lookup(request.host, request.port)

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
        """``(host, adapter)`` pairs, MCP endpoints as ``(URL, mcp.NAME)``."""
        pairs = {(host, adapter.name) for host, adapter in self._hosts.items() if adapter not in self._mcp}
        pairs.update((endpoint.endpoint.url, endpoint.name) for endpoint in self._mcp)
        return sorted(pairs)
