"""The gate server: one per user and installation, keeping the gate's engine loaded between hook calls.

``gitvow-hook`` (:mod:`gitvow_gate.hook_client`) starts it on first use, detached, as
``gitvow-gate-server SOCKET`` (:func:`gitvow_gate.hook_client.server_argv`). It listens on a Unix socket, mode 0600, in
a 0700 directory (``$XDG_RUNTIME_DIR/gitvow``, else ``$TMPDIR/gitvow-UID``), answers one call
per connection, one call at a time, and exits after :data:`IDLE` seconds without one
(``GITVOW_GATE_IDLE``), or when ``gitvow-hook --stop`` asks.

Each call is decided as the hook process itself would decide it: the server takes on the
client's working directory and environment (providers and classifiers it runs inherit them,
as they would from the hook) and calls :func:`gitvow_gate.invocation.answer`, which finds and
reads the policy file that applies to the call, as the in-process path does. So a policy
edit is in force on the next call; the server holds no policy of its own. What it does hold
is the installed plugin set it was started with: a call whose plugin key
(:func:`gitvow_gate.hook_client.plugin_key`) differs is answered ``stale`` and the server
exits, so that call is decided in-process and the next one starts a server on the new set.

A second server for the same socket never starts: a lock file beside the socket is held for
the server's life, and a socket file left by a server that died is removed only under it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sys
import time

from gitvow.plugins import installed
from gitvow_gate.hook_client import (
    PROTOCOL,
    Refused,
    check_private,
    frame,
    make_private_dir,
    peer_uid,
    plugin_key,
    receive,
    unframe,
)
from gitvow_gate.invocation import answer

#: Seconds without a call after which the server exits (``GITVOW_GATE_IDLE``).
IDLE = 600.0
#: Tries (0.1 s apart) at the lock another server holds, before this one gives way.
LOCK_TRIES = 20
#: The most seconds a client may take to send its call.
READ_TIMEOUT = 5.0


def idle_seconds(env: dict[str, str]) -> float:
    try:
        value = float(env.get("GITVOW_GATE_IDLE", ""))
    except ValueError:
        return IDLE
    return value if value > 0 else IDLE


def parse_environment(data: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in data.split(b"\0") if data else ():
        name, sep, value = os.fsdecode(item).partition("=")
        if sep:
            env[name] = value
    return env


class GateServer:
    """The listening socket and the plugin key the server was built with."""

    def __init__(self, path: str, key: bytes) -> None:
        self.path = path
        self.key = key
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.lexists(path):
            os.unlink(path)  # left by a server that died: we hold the lock, so nobody listens on it
        previous = os.umask(0o177)
        try:
            self.sock.bind(path)
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        self.inode = os.lstat(path).st_ino
        self.sock.listen(64)

    def close(self) -> None:
        self.sock.close()
        try:
            if os.lstat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass

    def serve(self, idle: float) -> None:
        self.sock.settimeout(idle)
        while True:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                return
            with conn:
                if not self.handle(conn):
                    return

    def handle(self, conn: socket.socket) -> bool:
        """Answer one connection; False when the server should stop."""
        try:
            if peer_uid(conn) != os.getuid():
                return True  # the socket is 0600: only a misconfiguration gets here
            fields = unframe(receive(conn, time.monotonic() + READ_TIMEOUT))
        except (OSError, Refused):
            return True
        if fields[0] != PROTOCOL or len(fields) < 2:
            reply(conn, [b"error", b"another protocol"])
            return True
        if fields[1] == b"stop":
            reply(conn, [b"stopped"])
            return False
        if fields[1] != b"decide" or len(fields) != 8:
            reply(conn, [b"error", b"not a call"])
            return True
        _, _, key, agent, event, cwd, env_text, stdin = fields
        if key != self.key:
            reply(conn, [b"stale"])  # built from another plugin set: the client decides, the next call restarts us
            return False
        try:
            env = parse_environment(env_text)
            os.chdir(os.fsdecode(cwd))
            os.environ.clear()
            os.environ.update(env)
            code, out, err = answer(agent.decode(), event.decode(), stdin, env)
        except Exception as exc:  # the client decides in-process; it never takes this as an answer
            reply(conn, [b"error", f"{type(exc).__name__}".encode()])
            return True
        finally:
            os.chdir("/")
        reply(conn, [b"ok", b"%d" % code, out, err])
        return True
        return True


def reply(conn: socket.socket, fields: list[bytes]) -> None:
    conn.settimeout(READ_TIMEOUT)
    with contextlib.suppress(OSError):  # the client gave up (its bound passed): it decides in-process
        conn.sendall(frame(fields))


def warm() -> None:
    """Discover the plugins once, so the first call after start is as fast as the rest."""
    installed()


def take(lock: int) -> bool:
    """The server's lock, waited for a little: a client starts a server when it cannot reach one,
    which may be while the last one is still on its way out (idle, or built from another plugin set)."""
    for _ in range(LOCK_TRIES):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.1)
        else:
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: gitvow-gate-server SOCKET", file=sys.stderr)
        return 2
    path = os.path.abspath(args[0])
    env = dict(os.environ)
    try:
        make_private_dir(os.path.dirname(path))
    except Refused as exc:
        print(f"gitvow gate server: {exc}", file=sys.stderr)
        return 1
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    if not take(lock):
        return 0  # another server holds this socket
    os.chdir("/")
    # as the client computes it, without the script's directory (``python -P -m``, the
    # fallback of server_argv, puts none first)
    key = plugin_key(sys.path if sys.flags.safe_path else sys.path[1:], env)
    warm()
    server = GateServer(path, key)
    try:
        check_private(path, kind="socket")
        server.serve(idle_seconds(env))
    finally:
        server.close()
        os.close(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
