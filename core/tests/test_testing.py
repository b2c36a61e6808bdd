"""gitvow.testing.RecordingServer: what it records and how it answers, over real sockets."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitvow.testing import RecordingServer, Reply, Seen


def fetch(server: RecordingServer, method: str, path: str, body: bytes | Iterator[bytes] | None = None,
          headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    conn: http.client.HTTPConnection
    if context is not None:
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=5)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=not isinstance(body, (bytes, type(None))))
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_records_each_request_and_answers_canned() -> None:
    with RecordingServer((201, {"content-type": "application/json"}, b'{"ok": true}')) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert fetch(server, "POST", "/api/v4/projects?per_page=2&x=", b'{"a": 1}', {"X-Token": "t"}) == (201, b'{"ok": true}')
        assert fetch(server, "DELETE", "/repos/o/r") == (201, b'{"ok": true}')
        first, second = server.seen
    assert (first.method, first.path, first.route, first.body) == ("POST", "/api/v4/projects?per_page=2&x=", "/api/v4/projects", b'{"a": 1}')
    assert first.query == "per_page=2&x="
    assert first.headers["x-token"] == "t"
    assert (second.method, second.route, second.body, second.query) == ("DELETE", "/repos/o/r", b"", "")


def test_routes_through_the_responder_and_reads_chunked_bodies() -> None:
    def respond(seen: Seen) -> Reply:
        return 200, {}, json.dumps({"echo": seen.body.decode()}).encode()

    with RecordingServer(respond) as server:
        status, body = fetch(server, "PUT", "/x", iter([b"ab", b"cd"]))
        assert (status, json.loads(body)) == (200, {"echo": "abcd"})
        assert server.seen[0].headers.get("transfer-encoding") == "chunked"
        server.clear()
        assert server.seen == []


def test_a_failing_responder_answers_500_not_a_hang() -> None:
    def respond(seen: Seen) -> Reply:
        raise KeyError("no route")

    with RecordingServer(respond) as server:
        status, body = fetch(server, "GET", "/missing")
        assert status == 500 and b"no route" in body
        assert [s.path for s in server.seen] == ["/missing"]


def test_record_false_keeps_nothing() -> None:
    with RecordingServer(record=False) as server:
        assert fetch(server, "GET", "/") == (200, b"")
        assert server.seen == []


def test_tls_from_a_certificate_file(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    client = ssl.create_default_context()
    ca.configure_trust(client)
    with RecordingServer((200, {}, b"hi"), certfile=tmp_path / "server.pem") as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert fetch(server, "GET", "/tls", context=client) == (200, b"hi")
        assert [s.path for s in server.seen] == ["/tls"]
    with pytest.raises(ValueError):
        RecordingServer(certfile=tmp_path / "server.pem", ssl_context=client)
