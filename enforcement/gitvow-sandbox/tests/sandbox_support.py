"""Real parts for the sandbox's tests: the proxy's own loopback stand-ins (a recording HTTPS
forge, ``gitvow proxy``) and ``gitvow run`` as a subprocess with a home of the test's own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: The proxy's end-to-end helpers (a recording forge, ``gitvow proxy`` on loopback), shared.
PROXY_TESTS = Path(__file__).resolve().parents[2] / "gitvow-proxy" / "tests"
sys.path.insert(0, str(PROXY_TESTS))

GITVOW = str(Path(sys.executable).with_name("gitvow"))
PYTHON = sys.executable


def gitvow_run(args: Sequence[str], *, home: Path, cwd: Path, env: Mapping[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``gitvow run ARGS`` as the operator would type it, from ``cwd``, with ``HOME=home``."""
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    return subprocess.run([GITVOW, "run", *_interpreter_visible(), *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


#: Where ``gitvow run`` mounts an empty scratch file system inside the sandbox.
_SCRATCH = (Path("/tmp"), Path("/var/tmp"), Path("/run"), Path("/dev/shm"))


def _interpreter_visible() -> list[str]:
    """``--allow-read`` for this test environment when it lives under a scratch directory (a
    checkout under /tmp, as CI may clone it): inside, /tmp is empty and its Python would be gone."""
    prefix = Path(sys.prefix).resolve()
    if any(prefix == scratch or scratch in prefix.parents for scratch in _SCRATCH):
        return ["--allow-read", str(prefix)]
    return []


def python_inside(code: str) -> list[str]:
    """A command that runs ``code`` with this Python (readable inside: it is not under the test's home)."""
    return [PYTHON, "-I", "-c", code]
