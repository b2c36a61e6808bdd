"""The canary check covers trailers: a write whose body is followed by a trailer carrying the
agent's canary (as written or base64'd) is refused (``canary_egress``) and never reaches the
forge, as in the body.

A real ``gitvow proxy`` process; the client speaks HTTP/2 (mitmproxy reads no HTTP/1.1
trailers) with a trailing HEADERS frame, over TLS inside the proxy's CONNECT tunnel, as a
hand-written client would.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxy_support import GITVOW, SECRETS, ProxyProcess, Upstream, github_policy, proxy_env, start_proxy

pytestmark = pytest.mark.e2e

COMMENT = "/api/v3/repos/team/app/issues/1/comments"


@pytest.fixture(scope="module")
def proxy(api: Upstream, ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("trailers")
    policy = workdir / "policy.toml"
    github_policy(policy, api, ca_file, workdir / "state.sqlite")
    running = start_proxy(policy, workdir, proxy_env(broken_plugin_path))
    yield running
    assert running.stop() == 0, running.log_text()


def canary(proxy: ProxyProcess) -> str:
    env = {**os.environ, "GITVOW_TEST_CODER": SECRETS["coder"]}
    out = subprocess.run([GITVOW, "env", "--policy", str(proxy.policy), "--agent", "coder", "--json",
                          "--confdir", str(proxy.confdir)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["GH_TOKEN"])


def post_with_trailer(proxy: ProxyProcess, api: Upstream, ca_file: Path, trailer: str) -> tuple[int, bytes]:
    """POST a comment through the proxy over HTTP/2, its body followed by trailers
    ``x-note: trailer``; the answer's status and body."""
    import h2.config
    import h2.connection
    import h2.events

    auth = base64.b64encode(f"coder:{SECRETS['coder']}".encode()).decode()
    raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
    raw.sendall(f"CONNECT {api.netloc} HTTP/1.1\r\nHost: {api.netloc}\r\nProxy-Authorization: Basic {auth}\r\n\r\n"
                .encode())
    answer = raw.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    context = ssl.create_default_context(cafile=str(proxy.ca))
    context.load_verify_locations(cafile=str(ca_file))
    context.set_alpn_protocols(["h2"])
    with context.wrap_socket(raw, server_hostname=api.netloc.rsplit(":", 1)[0]) as tls:
        assert tls.selected_alpn_protocol() == "h2"
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", "POST"), (":path", COMMENT), (":authority", api.netloc),
                                   (":scheme", "https"), ("content-type", "application/json")])
        conn.send_data(stream, json.dumps({"body": "a plain comment"}).encode())
        conn.send_headers(stream, [("x-note", trailer)], end_stream=True)
        tls.sendall(conn.data_to_send())
        status, body, done = 0, b"", False
        while not done:
            data = tls.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                    done = True
            tls.sendall(conn.data_to_send())
    return status, body


def test_a_canary_in_a_trailer_is_refused_and_never_forwarded(proxy: ProxyProcess, api: Upstream,
                                                              ca_file: Path) -> None:
    token = canary(proxy)
    for spelled in (token, base64.b64encode(token.encode()).decode()):
        api.clear()
        status, body = post_with_trailer(proxy, api, ca_file, f"x {spelled}")
        assert status == 403 and b"canary_egress" in body, (status, body[:300])
        assert api.seen == []
    lines = proxy.audit_lines()
    assert [line["reason"] for line in lines if line["method"] == "POST"][-2:] == ["canary_egress"] * 2
