"""The proxy a run goes through: the one named, the one the policy says is running, or one
started for the run and stopped after it.

A proxy started here listens on a free loopback port of its own, so two runs never share (or
stop) each other's proxy; its log goes to the run's private directory and is shown when it
fails to start.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gitvow_sandbox.errors import SandboxError

START_TIMEOUT = 60.0
PROXY_MISSING = ("no proxy is running and gitvow-proxy is not installed to start one: "
                 'pip install gitvow-proxy (or pip install "gitvow-sandbox[proxy]"), or pass --proxy URL')


@dataclass
class Proxy:
    """Where the proxy listens; ``process`` is set when this run started it."""

    host: str
    port: int
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def parse_url(url: str) -> tuple[str, int]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None:
        raise SandboxError(f"--proxy expects http://HOST:PORT, got {url!r}")
    return parts.hostname, port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(policy: Path, workdir: Path) -> Proxy:
    """``gitvow proxy`` on a free loopback port, for this run only."""
    port = _free_port()
    log = workdir / "proxy.log"
    cmd = [sys.executable, "-m", "gitvow", "proxy", "--policy", str(policy), "--listen-host", "127.0.0.1",
           "--listen-port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    proxy = Proxy("127.0.0.1", port, process, log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise SandboxError(f"the proxy started for this run exited ({process.returncode}): {tail[0]}")
        if answers("127.0.0.1", port, timeout=0.2):
            return proxy
        time.sleep(0.05)
    proxy.stop()
    raise SandboxError(f"the proxy started for this run did not listen within {START_TIMEOUT:g}s (log: {log})")


def find_or_start(policy: Path, url: str | None, workdir: Path) -> Proxy:
    """The proxy named by ``url``; else the one ``[proxy]`` says listens; else a new one."""
    if url is not None:
        host, port = parse_url(url)
        if not answers(host, port):
            raise SandboxError(f"no proxy answers at {host}:{port} (--proxy)")
        return Proxy(host, port)
    try:
        from gitvow.policy.load import load_policy
        from gitvow_proxy.settings import ProxyPolicy
    except ModuleNotFoundError as exc:
        if exc.name == "gitvow_proxy":
            raise SandboxError(PROXY_MISSING) from None
        raise
    settings = load_policy(policy, absent="skip").section(ProxyPolicy).proxy
    host = "127.0.0.1" if settings.listen_host in ("0.0.0.0", "::", "") else settings.listen_host
    if answers(host, settings.listen_port):
        return Proxy(host, settings.listen_port)
    return start(policy, workdir)
