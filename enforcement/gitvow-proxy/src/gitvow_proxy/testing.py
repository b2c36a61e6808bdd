"""Test helpers for deployments of the proxy: a real ``redis-server`` for shared state.

The proxy's own tests, the soak and the throughput benchmark start Redis through
:class:`RedisServer` (Debian's ``redis-server`` binary; nothing else is needed), and so can a
deployment's tests of its replicas. The core's :mod:`gitvow.testing` holds what every plugin
needs (the recording loopback server); Redis is the proxy's alone.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gitvow.testing import free_port, wait_for_port

#: Debian's ``redis-server`` (where the tests and benchmarks find it when it is not on PATH).
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@dataclass
class RedisServer:
    """A real ``redis-server`` on loopback: a free port, a working directory, no persistence
    unless ``appendonly``.

    It can be stopped and started again on the same port, as an outage would."""

    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    #: (certificate, key, CA) to serve TLS only (``rediss://``)
    tls: tuple[Path, Path, Path] | None = None
    #: Keep an append-only file in ``workdir`` (fsync on every write), as production should:
    #: a restart on the same ``workdir`` then loads everything back.
    appendonly: bool = False

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        listen = ["--port", str(self.port)]
        if self.tls is not None:
            cert, key, ca = self.tls
            listen = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(cert),
                      "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no"]
        cmd = [REDIS_SERVER, *listen, "--bind", "127.0.0.1", "--dir", str(self.workdir),
               "--save", "", "--protected-mode", "yes", *self._persistence()]
        with (self.workdir / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc)
        return self

    def _persistence(self) -> list[str]:
        if not self.appendonly:
            return ["--appendonly", "no"]
        return ["--appendonly", "yes", "--appendfsync", "always"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


__all__ = ["REDIS_SERVER", "RedisServer"]
