"""The egress check's lookup is the only one: a name it cannot resolve is refused, never left
to a second lookup that could answer otherwise.

A real ``gitvow proxy`` whose resolver is a loopback DNS server of the test's own (the proxy
runs under bubblewrap with an ``/etc/resolv.conf`` naming it): the server fails the first
lookup of a name and answers ``127.0.0.1`` after that, as a rebinding attacker's would.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import trustme
from proxy_support import ProxyProcess, Upstream, client, proxy_env, start_proxy, start_upstream, write_policy

NAME = "rebind-once.test"
#: A loopback address of its own: port 53 there is the test's.
DNS_ADDRESS = "127.0.77.53"
SERVFAIL, NOERROR = 2, 0
A, AAAA = 1, 28


@dataclass
class FlakyDns:
    """Answers ``NAME``: SERVFAIL to its first ``failures`` queries, then ``127.0.0.1`` (A; no AAAA)."""

    failures: int
    seen: list[tuple[str, int, int]] = field(default_factory=list)  # (name, type, rcode answered)
    sock: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))

    def start(self) -> FlakyDns:
        self.sock.bind((DNS_ADDRESS, 53))
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def _serve(self) -> None:
        while True:
            try:
                query, sender = self.sock.recvfrom(512)
            except OSError:
                return
            self.sock.sendto(self._answer(query), sender)

    def _answer(self, query: bytes) -> bytes:
        ident, _flags = struct.unpack("!HH", query[:4])
        labels, i = [], 12
        while query[i]:
            labels.append(query[i + 1:i + 1 + query[i]].decode())
            i += 1 + query[i]
        question = query[12:i + 5]
        qtype = struct.unpack("!H", query[i + 1:i + 3])[0]
        name = ".".join(labels).lower()
        failed = sum(rcode == SERVFAIL for _, _, rcode in self.seen)
        rcode = SERVFAIL if name == NAME and failed < self.failures else NOERROR
        self.seen.append((name, qtype, rcode))
        answers = b""
        if rcode == NOERROR and name == NAME and qtype == A:
            answers = struct.pack("!HHHIH", 0xC00C, A, 1, 0, 4) + socket.inet_aton("127.0.0.1")
        flags = 0x8180 | rcode
        return struct.pack("!HHHHHH", ident, flags, 1, 1 if answers else 0, 0, 0) + question + answers

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture
def dns() -> Iterator[FlakyDns]:
    if os.geteuid() != 0 or shutil.which("bwrap") is None:
        pytest.skip("a DNS server on port 53 and bubblewrap for the proxy's resolv.conf: needs root and bwrap")
    server = FlakyDns(failures=2).start()  # one lookup: its A and AAAA queries
    yield server
    server.stop()


@pytest.fixture
def target(ca: trustme.CA, upstream: Upstream) -> Iterator[Upstream]:
    """A loopback HTTPS server that answers for NAME: the operator's own service, in this test."""
    server = start_upstream(ca, upstream.git_root, names=(NAME,))
    yield server
    server.server.shutdown()


def _proxy(upstream: Upstream, ca_file: Path, workdir: Path, plugins: Path) -> ProxyProcess:
    resolv = workdir / "resolv.conf"
    resolv.write_text(f"nameserver {DNS_ADDRESS}\noptions attempts:1 timeout:2\n")
    policy = write_policy(workdir / "policy.toml", upstream, ca_file, workdir)
    wrapper = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(resolv), str(Path("/etc/resolv.conf").resolve()),
               "--die-with-parent", "--"]
    return start_proxy(policy, workdir, proxy_env(plugins), wrapper=wrapper)


def test_a_name_that_fails_to_resolve_once_is_refused_not_looked_up_again(
        upstream: Upstream, target: Upstream, dns: FlakyDns, ca_file: Path, broken_plugin_path: Path,
        tmp_path: Path) -> None:
    proxy = _proxy(upstream, ca_file, tmp_path, broken_plugin_path)
    try:
        with client(proxy, "reader", ca_file) as c, pytest.raises(httpx.ProxyError) as refused:
            c.get(f"https://{NAME}:{target.port}/admin")
        assert "403" in str(refused.value)
        assert target.seen == []  # the loopback service was never reached
        assert [rcode for name, _, rcode in dns.seen if name == NAME] == [SERVFAIL, SERVFAIL]  # one lookup only
        (line,) = [line for line in proxy.audit_lines() if line["verdict"] == "deny"]
        assert (line["reason"], line["stage"]) == ("egress_unresolved", "egress")
        # the next time, the name resolves (to loopback): refused for its address
        with client(proxy, "reader", ca_file) as c, pytest.raises(httpx.ProxyError):
            c.get(f"https://{NAME}:{target.port}/admin")
        assert [line["reason"] for line in proxy.audit_lines() if line["verdict"] == "deny"][-1] == \
            "egress_private_address"
        assert target.seen == []
    finally:
        proxy.stop()  # bubblewrap ends on the signal, and the proxy with it (its status is bubblewrap's)
