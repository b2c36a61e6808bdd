"""bubblewrap: finding it, the command line of one sandbox, and what its failures mean.

Namespaces: all of them (user where the kernel allows, mount, pid, network, ipc, uts,
cgroup), and no new user namespace inside where bubblewrap can forbid it. Capabilities:
none, also when run as root, so nothing inside can unmount what hides the operator's files. A new session: a process inside cannot push keystrokes into the
caller's terminal (TIOCSTI). The sandbox dies with ``gitvow run``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from gitvow_sandbox.environment import INNER_PORT
from gitvow_sandbox.errors import SandboxError
from gitvow_sandbox.layout import RUN_DIR

SOCKET = RUN_DIR / "proxy.sock"
#: Runs first inside: the bridge's inner end (socat), started and listening before the command.
INNER = r"""
socat TCP-LISTEN:"$1",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$2" </dev/null >/dev/null 2>&1 &
listening() { while read -r line; do case "$line" in *"$1"*) return 0;; esac; done </proc/net/tcp; return 1; }
i=0
until listening "$3"; do  # shell built-ins only: socat listens within a few ms
  i=$((i + 1))
  if [ "$i" -gt 1000 ]; then echo "gitvow run: the bridge to the proxy did not start inside the sandbox" >&2; exit 125; fi
  if [ "$i" -gt 200 ]; then sleep 0.01; fi
done
shift 3
exec "$@"
"""
USERNS_FIX = ("enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ "
              "sysctl kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap) or run as root")


def tools() -> tuple[str, str]:
    """bwrap and socat, by path; SandboxError with the install line when one is missing."""
    if not sys.platform.startswith("linux"):
        raise SandboxError(f"the sandbox needs Linux (bubblewrap); on {sys.platform} run the agent in a Linux VM or "
                           "container with gitvow run inside it")
    bwrap, socat = shutil.which("bwrap"), shutil.which("socat")
    missing = [name for name, path in (("bubblewrap", bwrap), ("socat", socat)) if path is None]
    if bwrap is None or socat is None:
        raise SandboxError(f"{' and '.join(missing)} not installed: apt-get install {' '.join(missing)} "
                           f"(dnf install {' '.join(missing)}); the command was not run")
    return bwrap, socat


def listening_pattern(port: int) -> str:
    """How ``/proc/net/tcp`` shows a socket listening on 127.0.0.1:``port``."""
    return f"0100007F:{port:04X} 00000000:0000 0A"


def no_nested_userns(bwrap: str) -> list[str]:
    """``--disable-userns`` where bubblewrap has it (0.8+) and user namespaces exist: nothing
    inside may make one of its own (less kernel to attack from inside). Read from the binary
    and /proc, not by running anything: start-up time."""
    try:
        supported = b"--disable-userns" in Path(bwrap).read_bytes()
        available = Path("/proc/sys/user/max_user_namespaces").read_text().strip() not in ("", "0")
    except OSError:
        return []
    return ["--unshare-user", "--disable-userns"] if supported and available else []


def command_line(bwrap: str, mounts: Sequence[str], cwd: str, command: Sequence[str]) -> list[str]:
    """bubblewrap's arguments. No environment among them: bubblewrap itself is started with
    the sandbox's environment alone (:func:`gitvow_sandbox.run`), because it is the sandbox's
    pid 1 and its ``/proc/1/environ`` and ``cmdline`` are readable inside."""
    args = [bwrap, "--unshare-all", *no_nested_userns(bwrap), "--cap-drop", "ALL", "--die-with-parent",
            "--new-session", "--hostname", "gitvow-sandbox"]
    args += [*mounts, "--chdir", cwd, "--"]
    args += ["/bin/sh", "-c", INNER, "gitvow-run", str(INNER_PORT), str(SOCKET), listening_pattern(INNER_PORT),
             *command]
    return args


def diagnose(bwrap: str) -> str:
    """Why bubblewrap could not set a sandbox up, in one line with the fix (after a failed start)."""
    probe = subprocess.run([bwrap, "--unshare-all", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "/bin/true"],
                           capture_output=True, text=True, timeout=30)
    said = (probe.stderr.strip().splitlines() or ["no message"])[-1]
    if probe.returncode != 0 and ("namespace" in said or "uid map" in said or "Operation not permitted" in said):
        return f"bubblewrap cannot create the sandbox's namespaces ({said}): {USERNS_FIX}; the command was not run"
    return f"bubblewrap could not set the sandbox up ({said}); the command was not run"
