"""The admin listener (``[admin] listen``, loopback by default): ``/metrics`` for Prometheus.

A plain HTTP server on a thread of its own, apart from the proxy's event loop and from the
agents' listener, so a scrape never waits behind agent traffic and an agent can never reach
it through the proxy port. It serves what it is given by path; other paths are 404.

Every request's ``Host`` must be one the listener answers to (:func:`allowed_hosts`): a web
page whose DNS name an attacker rebinds to 127.0.0.1 reaches the port, but its requests carry
the attacker's name, and are refused before any route runs (``/metrics`` included).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("gitvow_proxy")

#: path → a function returning (content type, body)
Routes = Mapping[str, Callable[[], tuple[str, bytes]]]

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_ANY = ("0.0.0.0", "::", "")


def allowed_hosts(listen_host: str, port: int, extra: Collection[str] = ()) -> frozenset[str]:
    """The ``Host`` values the admin listener answers to, lower-case ``name:port``.

    ``[admin] hosts`` (``extra``) names more (a name that reaches it through a TLS front end;
    a bare name means port 80/443 too); the listen address itself is always in, and a loopback
    or unspecified address adds the loopback names at the bound port.
    """
    host = listen_host.strip("[]").lower()
    shown = f"[{host}]" if ":" in host else host
    found = {f"{shown}:{port}"}
    if host in _ANY or host in ("127.0.0.1", "localhost", "::1"):
        found.update(f"{name}:{port}" for name in _LOOPBACK)
    for name in extra:
        name = name.strip().lower()
        found.add(name)
        if ":" not in name.rsplit("]", 1)[-1]:
            found.update({f"{name}:80", f"{name}:443"})
    return frozenset(found)


def host_allowed(header: str | None, hosts: Collection[str]) -> bool:
    """Whether a request's ``Host`` header is one of ``hosts`` (a missing one never is)."""
    return header is not None and header.strip().lower() in hosts


class AdminServer:
    """Serves ``routes`` on ``address`` until :meth:`stop`."""

    def __init__(self, address: tuple[str, int], routes: Routes, hosts: Collection[str] = ()) -> None:
        served = dict(routes)
        server = self

        class MetricsHandler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not host_allowed(self.headers.get("Host"), server.hosts):
                    self.send_error(421, "unknown Host")
                    return
                route = served.get(self.path.split("?", 1)[0])
                if route is None:
                    self.send_error(404)
                    return
                try:
                    content_type, body = route()
                except Exception as exc:
                    log.error("gitvow: admin %s failed: %s: %s", self.path, type(exc).__name__, exc)
                    self.send_error(500)
                    return
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # scrapes every few seconds would drown the proxy's own log

        self._server = ThreadingHTTPServer(address, MetricsHandler)
        self._server.daemon_threads = True
        self.hosts = allowed_hosts(address[0], self.address[1], hosts)
        self._thread = threading.Thread(target=self._server.serve_forever, name="gitvow-admin", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> AdminServer:
        self._thread.start()
        host, port = self.address
        log.info("gitvow: admin listener at http://%s:%d/ (/metrics)", host, port)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
