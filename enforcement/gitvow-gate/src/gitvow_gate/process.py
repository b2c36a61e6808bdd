"""Running a helper command (provider, classifier) with a deadline and an output limit.

No shell: ``argv`` runs directly. The child gets its own process group so a timeout kills
everything it started, and its stdout is read in chunks so a runaway writer is stopped at
the limit instead of filling memory. Never raises: every way of failing is a ``failure``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    """``failure`` is empty on a clean exit; ``code`` is the exit status (or None when killed)."""

    code: int | None
    stdout: bytes
    failure: str = ""


def _kill(proc: subprocess.Popen[bytes], reasons: list[str], why: str) -> None:
    if not reasons:
        reasons.append(why)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def run(argv: Sequence[str], stdin: bytes, *, cwd: str | None, timeout: float, max_output: int) -> Outcome:
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return Outcome(None, b"", f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    reasons: list[str] = []
    timer = threading.Timer(timeout, _kill, (proc, reasons, f"no answer within {timeout:g}s"))
    timer.daemon = True
    timer.start()
    chunks: list[bytes] = []
    try:
        if proc.stdin is None or proc.stdout is None:
            raise RuntimeError("internal error: proc.stdin or proc.stdout unset")
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:
            pass  # a helper that does not read its input may still answer
        size = 0
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_output:
                _kill(proc, reasons, f"more than {max_output // 1024} KiB of output")
                break
            chunks.append(chunk)
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    if reasons:
        return Outcome(None, b"", reasons[0])
    if code != 0:
        return Outcome(code, b"".join(chunks), f"exit status {code}")
    return Outcome(0, b"".join(chunks))
