"""The gate server: one per user and installation, keeping the gate's engine loaded between hook calls.

``gitvow-hook`` (:mod:`gitvow_gate.hook_client`) starts it on first use, detached, as
``gitvow-gate-server FIFO`` (:func:`gitvow_gate.hook_client.server_argv`). It reads a named pipe,
mode 0600, in a 0700 directory (``$XDG_RUNTIME_DIR/gitvow``, else ``$TMPDIR/gitvow-UID``): each
line names a call, whose request file and reply FIFO sit beside it and must pass the same
checks (this user's, open to nobody else, not links). It answers one call at a time, and exits
after :data:`IDLE` seconds without one (``GITVOW_GATE_IDLE``), or when ``gitvow-hook --stop`` asks.

Each call is decided as the hook process itself would decide it: the server takes on the
client's working directory and environment (providers and classifiers it runs inherit them,
as they would from the hook) and calls :func:`gitvow_gate.invocation.answer`, which finds and
reads the policy file that applies to the call, as the in-process path does. So a policy
edit is in force on the next call; the server holds no policy of its own. What it does hold
is the installed plugin set it was started with: a call whose plugin key
(:func:`gitvow_gate.hook_client.plugin_key`) differs is answered ``stale`` and the server
exits, so that call is decided in-process and the next one starts a server on the new set.

A second server for the same FIFO never starts: a lock file beside the FIFO is held for
the server's life, and the FIFO is made afresh under it.
"""

from __future__ import annotations

import fcntl
import os
import select
import sys
import time

from gitvow.plugins import installed
from gitvow_gate.hook_client import (
    PROTOCOL,
    Refused,
    check_fd,
    check_private,
    frame,
    make_private_dir,
    plugin_key,
    read_file,
    unframe,
)
from gitvow_gate.invocation import answer

#: Seconds without a call after which the server exits (``GITVOW_GATE_IDLE``).
IDLE = 600.0
#: Tries (0.1 s apart) at the lock another server holds, before this one gives way.
LOCK_TRIES = 20
#: The most seconds a client may take to read its answer.
WRITE_TIMEOUT = 5.0
#: The longest line naming a call (``c-PID-NANOSECONDS``).
NAME_MAX = 64


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
    """The request FIFO and the plugin key the server was built with."""

    def __init__(self, path: str, key: bytes) -> None:
        self.path = path
        self.key = key
        self.directory = os.path.dirname(path)
        if os.path.lexists(path):
            os.unlink(path)  # left by a server that died: we hold the lock, so nobody reads it
        os.mkfifo(path, 0o600)
        os.chmod(path, 0o600)  # whatever the umask
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        # our own writer: the FIFO never reads as closed between two clients
        self.keep = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        self.inode = os.fstat(self.fd).st_ino
        self.pending = b""

    def close(self) -> None:
        os.close(self.keep)
        os.close(self.fd)
        try:
            if os.lstat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass

    def serve(self, idle: float) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            if not poller.poll(int(idle * 1000)):
                return
            try:
                self.pending += os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            while b"\n" in self.pending:
                line, _, self.pending = self.pending.partition(b"\n")
                if not self.handle(line):
                    return
            if len(self.pending) > NAME_MAX:
                self.pending = b""  # not a call's name: nothing a client wrote

    def handle(self, line: bytes) -> bool:
        """Answer the call ``line`` names; False when the server should stop."""
        name = line.decode("ascii", "replace")
        if not name.startswith("c-") or not name[2:].replace("-", "").isdigit():
            return True
        base = os.path.join(self.directory, name)
        try:
            check_private(base + ".reply", kind="fifo")
            fields = unframe(read_file(base + ".req"))
        except (OSError, Refused):
            return True  # gone (the client gave up) or not to be trusted: nobody to answer
        go_on, reply_fields = self.decide(fields)
        reply(base + ".reply", reply_fields)
        return go_on

    def decide(self, fields: list[bytes]) -> tuple[bool, list[bytes]]:
        if fields[0] != PROTOCOL or len(fields) < 2:
            return True, [b"error", b"another protocol"]
        if fields[1] == b"stop":
            return False, [b"stopped"]
        if fields[1] != b"decide" or len(fields) != 8:
            return True, [b"error", b"not a call"]
        _, _, key, agent, event, cwd, env_text, stdin = fields
        if key != self.key:
            return False, [b"stale"]  # built from another plugin set: the client decides, the next call restarts us
        try:
            env = parse_environment(env_text)
            os.chdir(os.fsdecode(cwd))
            os.environ.clear()
            os.environ.update(env)
            code, out, err = answer(agent.decode(), event.decode(), stdin, env)
        except Exception as exc:  # the client decides in-process; it never takes this as an answer
            return True, [b"error", f"{type(exc).__name__}".encode()]
        finally:
            os.chdir("/")
        return True, [b"ok", b"%d" % code, out, err]


def reply(path: str, fields: list[bytes]) -> None:
    """Write the answer to the call's reply FIFO, never waiting on it past :data:`WRITE_TIMEOUT`."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # ENXIO: the client gave up
    except OSError:
        return
    try:
        check_fd(fd, path, kind="fifo")
        data = memoryview(frame(fields))
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        deadline = time.monotonic() + WRITE_TIMEOUT
        while data and time.monotonic() < deadline:
            poller.poll(100)
            try:
                data = data[os.write(fd, data):]
            except BlockingIOError:
                continue
    except (OSError, Refused):  # the client went away (EPIPE), or the FIFO is not its: it decides in-process
        pass
    finally:
        os.close(fd)


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
        print("usage: gitvow-gate-server FIFO", file=sys.stderr)
        return 2
    path = os.path.abspath(args[0])
    env = dict(os.environ)
    try:
        make_private_dir(os.path.dirname(path))
    except Refused as exc:
        print(f"gitvow gate server: {exc}", file=sys.stderr)
        return 1
    lock = os.open(path.removesuffix(".fifo") + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    if not take(lock):
        return 0  # another server holds this FIFO
    os.chdir("/")
    key = plugin_key(env)  # as the client computes it
    warm()
    server = GateServer(path, key)
    try:
        check_private(path, kind="fifo")
        server.serve(idle_seconds(env))
    finally:
        server.close()
        os.close(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
