"""``[egress]``: the hosts no adapter serves that the proxy tunnels, and the addresses it
refuses to tunnel to. A real ``gitvow proxy`` and loopback servers only: a name the agent
chose that resolves to loopback (as a rebinding name would) stands in for the operator's own
services."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from proxy_support import (
    RESOLVE_ADDON,
    ProxyProcess,
    Upstream,
    client,
    proxy_env,
    start_proxy,
    start_upstream,
    write_policy,
)

from gitvow.testing import wait_for_port
from gitvow_proxy.addons.egress import is_public
from gitvow_proxy.settings import Egress

NAMES = "registry.test,rebind.test"


@pytest.mark.parametrize(("address", "public"), [
    ("140.82.112.3", True), ("2606:4700::6810:84e5", True),
    ("127.0.0.1", False), ("127.8.9.10", False), ("::1", False), ("10.1.2.3", False), ("172.16.0.1", False),
    ("192.168.1.1", False), ("169.254.169.254", False), ("fe80::1", False), ("fd00:ec2::254", False),
    ("100.64.0.1", False), ("0.0.0.0", False), ("::", False), ("::ffff:127.0.0.1", False),
    ("::ffff:169.254.169.254", False), ("2002:7f00:1::", False), ("224.0.0.1", False), ("not-an-ip", False),
])
def test_only_public_unicast_addresses_are_public(address: str, public: bool) -> None:
    assert is_public(address) is public


def test_allow_and_internal_patterns() -> None:
    egress = Egress(allow=["pypi.org", "*.pythonhosted.org", "docs.test:8443"], internal=["registry.corp"])
    assert egress.allows("PyPI.org", 443) and egress.allows("files.pythonhosted.org", 443)
    assert not egress.allows("pythonhosted.org.evil.test", 443)
    assert egress.allows("docs.test", 8443) and not egress.allows("docs.test", 443)
    assert egress.allows("registry.corp", 5000)  # an internal host is meant to be reached
    assert not egress.allows("example.org", 443)
    assert Egress().allows("example.org", 443)  # no list: every host (other_hosts decides)
    with pytest.raises(ValueError, match="not a number"):
        Egress(allow=["pypi.org:https"])


@pytest.fixture(scope="module")
def other(ca: trustme.CA, upstream: Upstream) -> Iterator[Upstream]:
    """A second loopback server no adapter serves (the names in NAMES resolve to it)."""
    server = start_upstream(ca, upstream.git_root, names=NAMES.split(","))
    yield server
    server.server.shutdown()


def _proxy(upstream: Upstream, ca_file: Path, workdir: Path, plugins: Path, egress: str) -> ProxyProcess:
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = write_policy(workdir / "policy.toml", upstream, ca_file, workdir, egress)
    return start_proxy(policy, workdir, {**proxy_env(plugins), "GITVOW_TEST_RESOLVE": NAMES},
                       extra=[f"scripts={resolve}"])


def _refusal(proxy: ProxyProcess, ca_file: Path, url: str) -> str | None:
    """The reason the proxy gave for refusing the tunnel, or None if the request went through."""
    with client(proxy, "reader", ca_file) as c:
        try:
            c.get(url)
        except httpx.ProxyError as exc:
            return str(exc)
    return None


def test_names_and_addresses_that_are_not_public_are_refused_unless_internal(
        upstream: Upstream, other: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    egress = f'[egress]\ninternal = ["registry.test:{other.port}"]\n'
    proxy = _proxy(upstream, ca_file, tmp_path, broken_plugin_path, egress)
    try:
        assert _refusal(proxy, ca_file, f"https://registry.test:{other.port}/simple/") is None
        assert [s.path for s in other.seen] == ["/simple/"]
        other.clear()
        for url in (f"https://rebind.test:{other.port}/", f"https://127.0.0.1:{other.port}/",
                    f"https://localhost:{other.port}/"):
            refused = _refusal(proxy, ca_file, url)
            assert refused is not None and "403" in refused, url
        # a plain-http request through the proxy (no CONNECT) is checked the same way
        with client(proxy, "reader", ca_file) as c:
            plain = c.get(f"http://rebind.test:{other.port}/")
        assert plain.status_code == 403 and plain.headers["x-gitvow-reason"] == "egress_private_address"
        assert other.seen == []
        reasons = [(line["reason"], line["stage"]) for line in proxy.audit_lines() if line["verdict"] == "deny"]
        assert reasons and set(reasons) == {("egress_private_address", "egress")}
    finally:
        assert proxy.stop() == 0


def test_with_an_allow_list_other_hosts_are_refused_with_their_own_reason(
        upstream: Upstream, other: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    egress = f'[egress]\nallow = ["registry.test:{other.port}"]\ninternal = ["registry.test"]\n'
    proxy = _proxy(upstream, ca_file, tmp_path, broken_plugin_path, egress)
    try:
        assert _refusal(proxy, ca_file, f"https://registry.test:{other.port}/simple/") is None
        with client(proxy, "reader", ca_file) as c:
            refused = c.get(f"http://rebind.test:{other.port}/")
        assert refused.status_code == 403 and refused.headers["x-gitvow-reason"] == "egress_not_allowed"
        assert refused.text.strip().endswith("reason=egress_not_allowed")
        assert [s.path for s in other.seen] == ["/simple/"]
    finally:
        assert proxy.stop() == 0


def test_the_proxys_own_admin_listener_is_not_a_tunnel_target(
        upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        admin = s.getsockname()[1]
    proxy = _proxy(upstream, ca_file, tmp_path, broken_plugin_path, f'[admin]\nlisten = "127.0.0.1:{admin}"\n')
    try:
        wait_for_port(admin, proxy.proc)  # it listens
        with client(proxy, "reader", ca_file) as c:
            answer = c.get(f"http://127.0.0.1:{admin}/metrics")
        assert answer.status_code == 403 and answer.headers["x-gitvow-reason"] == "egress_private_address"
    finally:
        assert proxy.stop() == 0
