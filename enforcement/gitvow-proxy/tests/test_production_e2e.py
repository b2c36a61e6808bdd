"""Running it in production, through a real ``gitvow proxy``: shadow mode, decisions exported
over OTLP to a loopback collector, and ``[[tests]]`` checked at start and on every reload."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from otlp_receiver import running_receiver
from proxy_support import (
    GIT_TOKEN,
    GITVOW,
    SECRETS,
    Upstream,
    agent_client,
    proxy_env,
    start_proxy,
    wait_until,
    write_policy,
)

pytestmark = pytest.mark.e2e

PUSH = "/team/app.git/info/refs?service=git-receive-pack"
FETCH = "/team/app.git/info/refs?service=git-upload-pack"


def _shadow_reader(policy: Path) -> None:
    text = policy.read_text()
    policy.write_text(text.replace('[agents.reader]\nmode = "advisory"\n', '[agents.reader]\nmode = "advisory"\nenforce = false\n'))


def test_shadow_mode_forwards_what_it_would_refuse_and_says_so(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    _shadow_reader(policy)
    env = proxy_env(broken_plugin_path)
    proxy = start_proxy(policy, tmp_path, env)
    try:
        upstream.clear()
        with agent_client(proxy, "reader") as c:
            shadowed = c.get(upstream.url(PUSH))  # git.push at advisory: mode_denied, in shadow
        assert shadowed.status_code == 200 and "x-gitvow-reason" not in shadowed.headers
        (seen,) = upstream.seen
        assert seen.path == PUSH
        assert GIT_TOKEN in seen.headers.get("authorization", "") or seen.headers.get("authorization", "").startswith("Basic ")
        with agent_client(proxy, "talker") as c:  # another agent stays enforced
            refused = c.get(upstream.url(PUSH))
        # refused in git's protocol (200, an ERR packet git prints), the reason in its header
        assert refused.status_code == 200 and refused.headers["x-gitvow-reason"] == "write_surface_enforce"
        assert b"ERR gitvow refused git.push" in refused.content
        assert len(upstream.seen) == 1
        lines = proxy.audit_lines()
        shadow_line = next(line for line in lines if line["agent"] == "reader")
        assert shadow_line["verdict"] == "would_refuse" and shadow_line["reason"] == "mode_denied"
        assert "shadow mode: would refuse" in shadow_line["note"]
        status = subprocess.run([GITVOW, "status", "--policy", str(policy)], capture_output=True, text=True,
                                env={**os.environ, **env}, timeout=60)
        assert status.returncode == 0, status.stderr
        assert status.stdout.splitlines()[0].startswith("SHADOW MODE: not enforcing for reader")
        as_json = json.loads(subprocess.run([GITVOW, "status", "--policy", str(policy), "--json"], capture_output=True,
                                            text=True, env={**os.environ, **env}, timeout=60, check=True).stdout)
        assert as_json["shadow"] == ["reader"]
        assert any(r["verdict"] == "would_refuse" for r in as_json["recent_refusals"])
    finally:
        assert proxy.stop() == 0


def test_decisions_reach_an_otlp_collector_without_secrets(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    with running_receiver() as collector:
        extra = f'[audit.otlp]\nendpoint = "{collector.url}"\nheaders_env = "GITVOW_TEST_OTLP_HEADERS"\n'
        policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path, extra)
        env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_OTLP_HEADERS": "authorization=Bearer%20collector-key"}
        proxy = start_proxy(policy, tmp_path, env)
        try:
            with agent_client(proxy, "coder") as c:
                assert c.get(upstream.url(FETCH)).status_code == 200
            with agent_client(proxy, "reader") as c:
                assert c.get(upstream.url(PUSH)).headers["x-gitvow-reason"] == "mode_denied"
        finally:
            assert proxy.stop() == 0  # shutting down flushes the queue
        wait_until(lambda: len(collector.records) >= 2)
    by_agent = {r["attributes"]["gen_ai.agent.name"]: r for r in collector.records}
    assert by_agent["coder"]["severity"] == "INFO" and by_agent["coder"]["attributes"]["gitvow.verdict"] == "allow"
    assert by_agent["reader"]["severity"] == "ERROR"
    assert by_agent["reader"]["attributes"]["gitvow.reason"] == "mode_denied"
    assert by_agent["reader"]["attributes"]["url.path"] == "/team/app.git/info/refs"  # never the query
    assert collector.headers_seen[0]["authorization"] == "Bearer collector-key"
    raw = b"".join(collector.raw)
    for secret in (GIT_TOKEN, *SECRETS.values()):
        assert secret.encode() not in raw


FAILING_TEST = """
[[tests]]
name = "the reader may push"
agent = "reader"
method = "GET"
url = "https://{netloc}{push}"
expect = "allow"
"""

PASSING_TEST = FAILING_TEST.replace('expect = "allow"', 'expect = "deny"\nreason = "mode_denied"')


def test_policy_tests_refuse_a_start_and_a_reload(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    env = proxy_env(broken_plugin_path)
    bad = write_policy(tmp_path / "bad.toml", upstream, ca_file, tmp_path,
                       FAILING_TEST.format(netloc=upstream.netloc, push=PUSH))
    result = subprocess.run([GITVOW, "proxy", "--policy", str(bad), "--listen-port", "0"], capture_output=True,
                            text=True, env={**os.environ, **env}, timeout=60)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "tests[0] (the reader may push): expected allow, got deny reason=mode_denied" in line and str(bad) in line

    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path,
                          PASSING_TEST.format(netloc=upstream.netloc, push=PUSH))
    proxy = start_proxy(policy, tmp_path, env)
    try:
        # The edit would let the reader push: its own example refuses it.
        policy.write_text(policy.read_text().replace('[agents.reader]\nmode = "advisory"', '[agents.reader]\nmode = "issues_and_prs"'))
        wait_until(lambda: "kept the last good policy" in proxy.log_text())
        assert "tests[0] (the reader may push): expected deny reason=mode_denied, got allow" in proxy.log_text()
        with agent_client(proxy, "reader") as c:
            # the last good policy is in force
            assert c.get(upstream.url(PUSH)).headers.get("x-gitvow-reason") == "mode_denied"
    finally:
        assert proxy.stop() == 0
