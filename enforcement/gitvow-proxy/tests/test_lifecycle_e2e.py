"""The proxy process itself: startup errors, policy reload, tunnelling, ``mitmdump -s``,
``gitvow env`` and clean shutdown."""

from __future__ import annotations

import json
import shlex
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import trustme
from proxy_support import GITVOW, SECRETS, ProxyProcess, Upstream, proxy_env, start_proxy, start_upstream, write_policy

pytestmark = pytest.mark.e2e

FETCH = "/team/app.git/info/refs?service=git-upload-pack"
PUSH = "/team/app.git/info/refs?service=git-receive-pack"


def client(proxy: ProxyProcess, agent: str, cafile: Path | None = None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(cafile or proxy.ca))
    return httpx.Client(proxy=proxy.url(agent, SECRETS[agent]), verify=context, timeout=30)


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_bad_policy_at_startup_is_one_line_and_exit_2(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[agents.bot]\nmode = "sudo"\n')
    result = subprocess.run([GITVOW, "proxy", "--policy", str(policy), "--listen-port", "0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(policy) in lines[0] and "agents.bot.mode" in lines[0]


def test_reload_applies_edits_and_keeps_the_last_good_policy(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        with client(proxy, "coder") as c:
            assert c.get(upstream.url(PUSH)).status_code == 200
            write_policy(policy, upstream, ca_file, tmp_path, '[run_state]\npaused = ["team/app"]\n')
            wait_until(lambda: c.get(upstream.url(PUSH)).headers.get("x-gitvow-reason") == "repo_paused")
            policy.write_text(policy.read_text() + "\n[agents.coder]\nmode = 'nope'\n")  # a bad edit
            wait_until(lambda: "kept the last good policy" in proxy.log_text())
            r = c.get(upstream.url(PUSH))
            assert r.headers.get("x-gitvow-reason") == "repo_paused"  # still the last good one
        assert "last good policy" in proxy.log_text() and str(policy) in proxy.log_text()
    finally:
        assert proxy.stop() == 0


def test_the_write_budget_survives_a_restart(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    url = upstream.url("/team/app.git/git-receive-pack")
    body = b"0000"  # a push with no commands: classified git.push, answered by git-http-backend
    # as git sends it, so the forge performs it (a write the forge refuses gives its budget back)
    kind = {"Content-Type": "application/x-git-receive-pack-request"}
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        with client(proxy, "limited") as c:
            first = c.post(url, content=body, headers=kind)
            assert first.headers.get("x-gitvow-reason") is None and first.status_code < 400, first.status_code
    finally:
        assert proxy.stop() == 0
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))  # same [proxy] state file
    try:
        with client(proxy, "limited") as c:
            again = c.post(url, content=body, headers=kind)
        assert again.status_code == 429 and again.headers["x-gitvow-reason"] == "write_budget"
    finally:
        assert proxy.stop() == 0


def test_hosts_without_an_adapter_are_tunnelled_untouched_or_refused(
    upstream: Upstream, ca: trustme.CA, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    other = start_upstream(ca, upstream.git_root)
    try:
        # the unserved upstream is on loopback: mapped as internal, or the egress check refuses it
        policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path, '[egress]\ninternal = ["127.0.0.1"]\n')
        proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
        try:
            # Not intercepted: the client sees the upstream's own certificate (test CA), not mitmproxy's.
            with client(proxy, "reader", cafile=ca_file) as c:
                r = c.get(other.url("/anything?x=1"), headers={"Authorization": "token agent-own"})
            assert r.status_code == 200
            (seen,) = other.seen
            assert seen.headers["authorization"] == "token agent-own"  # untouched: nothing injected or removed
            with client(proxy, "reader") as c, pytest.raises(httpx.ConnectError):
                c.get(other.url("/anything"))  # the proxy's CA does not vouch for a tunnelled host
            assert [line["stage"] for line in proxy.audit_lines() if line["verdict"] == "tunnel"]
            # Switch to refusing through a policy edit: the running proxy picks it up.
            policy.write_text(policy.read_text().replace("[proxy]\n", '[proxy]\nother_hosts = "refuse"\n'))
            other.clear()

            def refused() -> bool:
                with client(proxy, "reader", cafile=ca_file) as c:
                    try:
                        c.get(other.url("/anything"))
                    except httpx.ProxyError as exc:
                        return "403" in str(exc)
                return False

            wait_until(refused)
            other.clear()
            assert refused() and other.seen == []
        finally:
            assert proxy.stop() == 0
    finally:
        other.server.shutdown()


def test_the_addon_loads_in_plain_mitmdump(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    env = {**proxy_env(broken_plugin_path)}
    proxy = start_proxy(policy, tmp_path, env, mitmdump=True, extra=[f"ssl_verify_upstream_trusted_ca={ca_file}"])
    try:
        upstream.clear()
        with client(proxy, "reader") as c:
            assert c.get(upstream.url(FETCH)).status_code == 200
            denied = c.get(upstream.url(PUSH))
        # refused in git's protocol: an ERR packet git prints as "fatal: remote error: …"
        assert denied.status_code == 200 and denied.headers["x-gitvow-reason"] == "mode_denied"
        assert b"ERR gitvow refused git.push" in denied.content
        assert [s.path for s in upstream.seen] == [FETCH]
        with httpx.Client(proxy=proxy.url(), verify=ssl.create_default_context(cafile=str(proxy.ca))) as anon, \
                pytest.raises(httpx.ProxyError, match="407"):
            anon.get(upstream.url(FETCH))
    finally:
        proxy.stop()


def test_sigint_stops_it_cleanly(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    # SIGTERM is what every other test's teardown sends (and asserts exit status 0).
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    proxy.proc.send_signal(signal.SIGINT)
    assert proxy.proc.wait(timeout=15) == 0, proxy.log_text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=1).close()


def test_env_prints_what_an_agent_shell_needs(proxy: ProxyProcess, tmp_path: Path) -> None:
    import os

    env = {**os.environ, "GITVOW_TEST_CODER": SECRETS["coder"], "GITVOW_TEST_READER": SECRETS["reader"],
           "GITVOW_TEST_LIMITED": SECRETS["limited"], "GITVOW_TEST_CONTROL_PLANE": SECRETS["control-plane"]}
    args = [GITVOW, "env", "--policy", str(proxy.policy), "--agent", "coder", "--listen-port", str(proxy.port),
            "--confdir", str(proxy.confdir)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env).stdout
    exported = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in out.splitlines())
    assert exported["HTTPS_PROXY"] == f"http://coder:{SECRETS['coder']}@127.0.0.1:{proxy.port}"
    bundle = Path(exported["SSL_CERT_FILE"])
    assert proxy.ca.read_text().strip() in bundle.read_text()
    for name in ("REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"):
        assert exported[name] == str(bundle)
    assert exported["NODE_EXTRA_CA_CERTS"] == str(proxy.ca)
    assert exported["GIT_HTTP_PROXY_AUTHMETHOD"] == "basic"
    assert exported["GH_TOKEN"].startswith("gvc_") and exported["GH_TOKEN"] == exported["GITLAB_TOKEN"]
    as_json = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True, check=True, env=env).stdout)
    assert as_json == exported
    missing = subprocess.run([GITVOW, "env", "--policy", str(proxy.policy), "--agent", "ghost"],
                             capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "ghost" in missing.stderr and len(missing.stderr.splitlines()) == 1
