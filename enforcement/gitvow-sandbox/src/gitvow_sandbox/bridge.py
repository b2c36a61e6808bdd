"""The sandbox's one way out: a Unix socket, outside, piped to the proxy's TCP port.

The sandbox has a network namespace of its own with loopback only, so no TCP address of the
machine is reachable from inside. A Unix socket is a file: bound into the sandbox at
``/run/gitvow/proxy.sock``, it is the single connection it can make, and ``socat`` inside
turns it back into a loopback port that proxy-aware clients can be pointed at. This side runs
in ``gitvow run``'s own process, on threads (no event loop to import or stop: start-up time),
and listens before the sandbox starts, so no client can be early.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

CHUNK = 256 * 1024


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until end of stream, then pass the end on (half-close), so both directions finish."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class Bridge:
    """Accept on the Unix socket ``path``; connect each client to ``target`` and pipe both ways."""

    def __init__(self, path: Path, target: tuple[str, int]) -> None:
        self.path = path
        self.target = target
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def start(self) -> Bridge:
        self._listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._listener.listen(128)
        threading.Thread(target=self._accept, name="gitvow-run-bridge", daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # stopped
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            try:
                upstream = socket.create_connection(self.target, timeout=30)
            except OSError:
                return
            with upstream:
                upstream.settimeout(None)
                back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
                back.start()
                _pump(client, upstream)
                back.join()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
