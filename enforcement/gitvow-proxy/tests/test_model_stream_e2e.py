"""Model keys held by the proxy, and a model's streamed answer passed on as it is written.

A real ``gitvow proxy`` before a loopback stand-in for Anthropic's API (mapped to the
``anthropic`` adapter): the agent sends its placeholder key, the stand-in must see the key
``[credentials.anthropic]`` holds, and its server-sent events must reach the agent one at a
time: the stand-in holds its second event back until the agent has read the first, which a
proxy that buffered the answer would never deliver.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme
from proxy_support import ProxyProcess, client, proxy_env, start_proxy

MODEL_KEY = "sk-ant-api03-realkeyheldbytheproxy0123456789"
PLACEHOLDER = "gvc_theagentsplaceholder"


@dataclass
class ModelStandIn:
    """Answers ``POST /v1/messages`` with an event stream; records what reached it."""

    released: threading.Event = field(default_factory=threading.Event)
    seen: list[dict[str, str]] = field(default_factory=list)
    early: list[bool] = field(default_factory=list)  # the first event was read before the rest was sent
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])


def _handler(model: ModelStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            model.seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk(b'event: message_start\ndata: {"type": "message_start"}\n\n')
            model.early.append(model.released.wait(timeout=10))
            # an answer that echoes the key, cut in two on the wire: the proxy must still find it
            half = len(MODEL_KEY) // 2
            self._chunk(b'event: content_block_delta\ndata: {"text": "' + MODEL_KEY[:half].encode())
            time.sleep(0.05)
            self._chunk(MODEL_KEY[half:].encode() + b'"}\n\n')
            self._chunk(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
            self._chunk(b"")

    return Handler


@pytest.fixture
def model(ca: trustme.CA) -> Iterator[ModelStandIn]:
    stand_in = ModelStandIn()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand_in))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    stand_in.server = server
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield stand_in
    stand_in.released.set()
    server.shutdown()


def _proxy(model: ModelStandIn, ca_file: Path, workdir: Path, plugins: Path, extra: str = "") -> ProxyProcess:
    policy = workdir / "policy.toml"
    policy.write_text(extra + f"""
[hosts]
"127.0.0.1:{model.port}" = "anthropic"

[credentials.anthropic]
token_env = "GITVOW_TEST_MODEL_KEY"

[proxy]
upstream_ca = "{ca_file}"
state = "{workdir / 'state.sqlite'}"

[audit]
path = "{workdir / 'audit.jsonl'}"

[agents.coder]
mode = "issues_and_prs"
secret_env = "GITVOW_TEST_CODER"
""")
    return start_proxy(policy, workdir, {**proxy_env(plugins), "GITVOW_TEST_MODEL_KEY": MODEL_KEY})


def test_the_model_key_is_the_proxys_and_the_stream_passes_event_by_event(
        model: ModelStandIn, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    proxy = _proxy(model, ca_file, tmp_path, broken_plugin_path)
    events: list[str] = []
    try:
        with client(proxy, "coder", ca_file) as c, c.stream(
                "POST", f"https://127.0.0.1:{model.port}/v1/messages", json={"stream": True, "messages": []},
                headers={"x-api-key": PLACEHOLDER, "anthropic-version": "2023-06-01",
                         "accept-encoding": "gzip"}) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"] == "text/event-stream"
            for line in answer.iter_lines():
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
                    model.released.set()  # the first event is here: the stand-in may go on
                elif line.startswith("data:") and "text" in line:
                    events.append(json.loads(line[5:])["text"])
    finally:
        assert proxy.stop() == 0
    assert model.early == [True], "the first event reached the agent only after the whole answer"
    assert events == ["message_start", "content_block_delta", "[redacted by gitvow]", "message_stop"]
    (seen,) = model.seen
    assert seen["x-api-key"] == MODEL_KEY and PLACEHOLDER not in json.dumps(seen)
    assert seen["accept-encoding"] == "identity"
    (line,) = proxy.audit_lines()
    assert (line["verdict"], line["operations"], line["path"]) == ("allow", ["inference.call"], "/v1/messages")
    assert MODEL_KEY not in proxy.audit.read_text() + proxy.log_text()


def test_a_cap_on_model_calls_answers_429_and_the_model_never_sees_the_call_over_it(
        model: ModelStandIn, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    """``[budget] operations`` caps ``inference.call`` like any operation: the call over the cap
    is refused with 429 and ``Retry-After``, in the one-line format, and never reaches the model."""
    model.released.set()
    proxy = _proxy(model, ca_file, tmp_path, broken_plugin_path,
                   '[budget]\nwindow_seconds = 3600\noperations = { "inference.call" = 1 }\n')
    url = f"https://127.0.0.1:{model.port}/v1/messages"
    headers = {"x-api-key": PLACEHOLDER, "anthropic-version": "2023-06-01"}
    try:
        with client(proxy, "coder", ca_file) as c:
            assert c.post(url, json={"messages": []}, headers=headers).status_code == 200
            over = c.post(url, json={"messages": []}, headers=headers)
    finally:
        assert proxy.stop() == 0
    assert over.status_code == 429 and over.headers["x-gitvow-reason"] == "write_budget"
    assert int(over.headers["retry-after"]) > 0
    assert over.text.strip().endswith("reason=write_budget") and "\n" not in over.text.strip()
    assert len(model.seen) == 1
