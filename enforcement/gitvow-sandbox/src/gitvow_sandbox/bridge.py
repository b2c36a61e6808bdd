"""The sandbox's one way out: a Unix socket, outside, piped to the proxy's TCP port.

The sandbox has a network namespace of its own with loopback only, so no TCP address of the
machine is reachable from inside. A Unix socket is a file: bound into the sandbox at
``/run/gitvow/proxy.sock``, it is the single connection it can make, and ``socat`` inside
turns it back into a loopback port that proxy-aware clients can be pointed at. This side runs
in ``gitvow run``'s own process (an event loop on a thread), so it is ready before the
sandbox starts and costs no process of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from pathlib import Path

CHUNK = 256 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()


class Bridge:
    """Accept on the Unix socket ``path``; connect each client to ``target`` and pipe both ways."""

    def __init__(self, path: Path, target: tuple[str, int]) -> None:
        self.path = path
        self.target = target
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="gitvow-run-bridge", daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def start(self) -> Bridge:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(128)  # listening before the sandbox starts: no client can be early
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(asyncio.start_unix_server(self._serve, sock=listener), self._loop)
        self._server = started.result(timeout=10)
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        for w in (up_writer, writer):
            w.close()

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
