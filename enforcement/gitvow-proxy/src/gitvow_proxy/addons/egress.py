"""The egress addon: where a tunnel, or a plain request, to a host no adapter serves may go.

Served hosts are the forges the policy maps, judged by the pipeline; every other host is
tunnelled untouched (or refused by ``[proxy] other_hosts``). Two checks come first, here:

- ``[egress] allow``: when set, only the hosts it names are tunnelled; any other is refused
  with ``egress_not_allowed``, so package registries and documentation stay reachable while
  ``other_hosts = "refuse"`` closes the rest.
- the host's addresses: it is resolved here, and if any address is not public (loopback,
  private, link-local with the cloud metadata service 169.254.169.254, carrier-grade NAT,
  unspecified, multicast, IPv4 in IPv6 of those) it is refused with
  ``egress_private_address``, unless ``[egress] internal`` maps it. A name the agent chose
  must not point the proxy at the operator's own services (the proxy's admin listener, a
  database, the metadata service). The connection then goes to the address that was
  checked (pinned in ``server_connect``), so a second DNS answer cannot differ. A name that
  does not resolve here, or resolves to nothing, is refused with ``egress_unresolved``: left
  to mitmproxy, it would be looked up again, and a resolver that fails first and answers a
  loopback address second would get past the check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

from mitmproxy import connection, http
from mitmproxy.proxy import server_hooks

from gitvow_proxy.flow_metadata import AUDIT_KEY, IDENTITY_KEY, Audited
from gitvow_proxy.refusals import plain_refusal
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")

EGRESS_NOT_ALLOWED = "egress_not_allowed"
EGRESS_PRIVATE_ADDRESS = "egress_private_address"
EGRESS_UNRESOLVED = "egress_unresolved"


def is_public(address: str) -> bool:
    """Whether ``address`` is a public unicast address (what a tunnel may reach unmapped)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is not None:
            ip = embedded
    return ip.is_global and not ip.is_multicast


class EgressControl:
    """Refuses tunnels to hosts outside ``[egress] allow`` or with non-public addresses; pins the rest."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self._pinned: dict[tuple[str, str, int], str] = {}  # (client id, host, port) → address checked

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        await self._check(flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        """A plain (absolute-form) request to a host no adapter serves is checked like a tunnel."""
        await self._check(flow)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        address = data.server.address
        if address is None:
            return
        pinned = self._pinned.get((data.client.id, address[0], address[1]))
        if pinned is not None:
            data.server.address = (pinned, address[1])

    def client_disconnected(self, client: connection.Client) -> None:
        for key in [key for key in self._pinned if key[0] == client.id]:
            del self._pinned[key]

    async def _check(self, flow: http.HTTPFlow) -> None:
        proven = flow.metadata.get(IDENTITY_KEY)
        runtime = self.shared.runtime
        if flow.response is not None or proven is None or runtime is None:
            return
        host, port = flow.request.host, flow.request.port
        if runtime.engine.hosts.lookup(host, port) is not None:
            return  # a forge the policy maps: the pipeline judges it
        egress = runtime.policy.section(ProxyPolicy).egress
        if not egress.allows(host, port):
            self._refuse(flow, proven[0].name, EGRESS_NOT_ALLOWED, f"{host}:{port} is not in [egress] allow")
            return
        if egress.is_internal(host, port):
            return
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:  # never left to a second lookup, which could answer otherwise
            self._refuse(flow, proven[0].name, EGRESS_UNRESOLVED,
                         f"{host} could not be resolved ({exc.strerror or type(exc).__name__})")
            return
        addresses = [str(info[4][0]) for info in infos]
        private = [a for a in addresses if not is_public(a)]
        if private:
            self._refuse(flow, proven[0].name, EGRESS_PRIVATE_ADDRESS,
                         f"{host} resolves to {private[0]}, which is not a public address (map it in "
                         "[egress] internal if it is meant)")
            return
        if not addresses:
            self._refuse(flow, proven[0].name, EGRESS_UNRESOLVED, f"{host} resolves to no address")
            return
        self._pinned[(flow.client_conn.id, host, port)] = addresses[0]

    @staticmethod
    def _refuse(flow: http.HTTPFlow, agent: str, code: str, why: str) -> None:
        req = flow.request
        flow.response = plain_refusal(403, f"gitvow refused a connection to {req.host}:{req.port}: {why}. "
                                      f"reason={code}", code)
        flow.metadata[AUDIT_KEY] = Audited(req.method, f"{req.host}:{req.port}", req.path, agent, "deny", code,
                                           "egress")


__all__ = ["EGRESS_NOT_ALLOWED", "EGRESS_PRIVATE_ADDRESS", "EGRESS_UNRESOLVED", "EgressControl", "is_public"]
