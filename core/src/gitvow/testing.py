"""A loopback HTTP(S) server that records what reached it, for tests of adapters and proxies.

A forge adapter is only trustworthy when it has classified what a *real* client puts on the
wire, and the proxy only when its upstream saw exactly what it forwarded. Both need the same
thing: a server on 127.0.0.1 that keeps every request it received and answers with just
enough for the client to carry on. :class:`RecordingServer` is that server, shipped in the
core so plugin authors and gitvow's own suites share one copy instead of each writing their
own ``BaseHTTPRequestHandler``.

It uses the standard library only; TLS takes a certificate and key the test made (for
instance with ``trustme``, which stays a test dependency), or a ready ``ssl.SSLContext``::

    def respond(seen: Seen) -> Reply:
        return 201 if seen.method == "POST" else 200, {"content-type": "application/json"}, b"{}"

    with RecordingServer(respond) as server:
        client = SomeForgeClient(server.url)
        ...
        assert [s.method for s in server.seen] == ["GET", "POST"]

It never listens beyond loopback.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["RecordingServer", "Reply", "Responder", "Seen", "free_port", "wait_for_port"]


@dataclass(frozen=True)
class Seen:
    """One request as the server received it: ``path`` is the request target as sent (with
    its query string), ``headers`` have lower-case names, ``body`` is de-chunked."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]

    @property
    def query(self) -> str:
        """The raw query string, without ``?`` (``urllib.parse.parse_qs`` it if need be)."""
        return self.path.partition("?")[2]


Reply = tuple[int, Mapping[str, str], bytes]
"""Status, headers and body; ``Content-Length`` is always set by the server."""

Responder = Callable[[Seen], Reply]
"""Decides the answer to one recorded request; runs on the server's request thread."""


class RecordingServer(ThreadingHTTPServer):
    """A threading HTTP/1.1 server on ``127.0.0.1:<free port>`` that records every request.

    ``respond`` is either a :data:`Responder` or one canned :data:`Reply` for every request.
    If the responder raises, the client gets a 500 (the request is still recorded), so a
    broken stand-in shows up as a failing test, never as a hang. Use it as a context manager,
    or call :meth:`start` and :meth:`stop`. ``record=False`` keeps nothing, for a load
    stand-in whose memory must not grow with the number of requests.
    """

    daemon_threads = True  # keep-alive clients must not hold up stop()
    block_on_close = False

    def __init__(
        self,
        respond: Responder | Reply = (200, {}, b""),
        *,
        certfile: str | os.PathLike[str] | None = None,
        keyfile: str | os.PathLike[str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        record: bool = True,
    ) -> None:
        if certfile is not None and ssl_context is not None:
            raise ValueError("give certfile/keyfile or ssl_context, not both")
        super().__init__(("127.0.0.1", 0), _Handler)
        if callable(respond):
            self.respond: Responder = respond
        else:
            canned = respond
            self.respond = lambda seen: canned
        if certfile is not None:
            ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_context.load_cert_chain(certfile, keyfile)
        self.tls = ssl_context is not None
        if ssl_context is not None:
            self.socket = ssl_context.wrap_socket(self.socket, server_side=True)
        self.recording = record
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def netloc(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL, ``http://`` or ``https://`` as the server speaks."""
        return f"{'https' if self.tls else 'http'}://{self.netloc}"

    @property
    def seen(self) -> list[Seen]:
        """A snapshot of the requests received so far, oldest first."""
        with self._lock:
            return list(self._seen)

    def record(self, seen: Seen) -> None:
        if not self.recording:
            return
        with self._lock:
            self._seen.append(seen)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def start(self) -> RecordingServer:
        """Serve on a daemon thread; returns the server for chaining."""
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join(5)
            self._thread = None
        self.server_close()

    def __enter__(self) -> RecordingServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server: RecordingServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle + delayed ACK stall each reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self._read_body())
        self.server.record(seen)
        try:
            status, headers, body = self.server.respond(seen)
        except Exception as exc:  # a broken stand-in must answer, not hang the client
            status, headers, body = 500, {"content-type": "text/plain"}, f"responder failed: {exc!r}".encode()
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(
    port: int,
    proc: subprocess.Popen[bytes],
    *,
    timeout: float = 120.0,
    ready: Callable[[], bool] = lambda: True,
) -> None:
    """Wait until the process ``proc`` accepts connections on ``port`` and ``ready()`` holds.

    Raises RuntimeError if the process exits first or the time runs out. The time is generous
    on purpose: a proxy that cannot start exits (and is reported at once), so the bound only
    matters on a machine so loaded that starting mitmproxy takes tens of seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                # Polling a free port in the ephemeral range can connect the socket to itself.
                if conn.getsockname() != conn.getpeername() and ready():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on port {port} within {timeout:g}s")
