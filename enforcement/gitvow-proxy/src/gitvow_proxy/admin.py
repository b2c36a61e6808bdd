"""The admin listener (``[admin] listen``, loopback by default): ``/metrics`` for Prometheus.

A plain HTTP server on a thread of its own, apart from the proxy's event loop and from the
agents' listener, so a scrape never waits behind agent traffic and an agent can never reach
it through the proxy port. It serves what it is given by path; other paths are 404.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("gitvow_proxy")

#: path → a function returning (content type, body)
Routes = Mapping[str, Callable[[], tuple[str, bytes]]]


class AdminServer:
    """Serves ``routes`` on ``address`` until :meth:`stop`."""

    def __init__(self, address: tuple[str, int], routes: Routes) -> None:
        served = dict(routes)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
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

        self._server = ThreadingHTTPServer(address, Handler)
        self._server.daemon_threads = True
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
