"""``gitvow proxy`` at start: what it refuses, and what it says, as a new user meets it.

- a forge credential or an agent secret the policy names by an environment variable that is
  not set refuses the start, in one line naming the key and the variable, unless the operator
  says ``--allow-unset-secrets``; then it warns once per variable, not twice;
- a port in use points at ``--listen-port`` (mitmproxy's own hint names ``--mode``, which
  ``gitvow proxy`` does not take).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import textwrap
import time
from pathlib import Path

from proxy_support import GITVOW

from gitvow.testing import free_port


def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(textwrap.dedent(f"""
        [credentials.github]
        token_env = "GITVOW_TEST_UNSET_TOKEN"

        [agents.bot]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_UNSET_BOT"

        [proxy]
        state = "{tmp_path / 'state.sqlite'}"
        confdir = "{tmp_path / 'conf'}"

        [audit]
        path = "{tmp_path / 'audit.jsonl'}"
    """))
    return path


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_UNSET")}
    return {**env, **extra}


def test_an_unset_credential_or_agent_secret_refuses_the_start(tmp_path: Path) -> None:
    path = policy(tmp_path)
    proc = subprocess.run([GITVOW, "proxy", "--policy", str(path), "--listen-port", str(free_port())],
                          capture_output=True, text=True, timeout=120, env=environment())
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr
    assert "credentials.github" in line and "GITVOW_TEST_UNSET_TOKEN" in line
    assert "agents.bot" in line and "GITVOW_TEST_UNSET_BOT" in line and "--allow-unset-secrets" in line
    assert "listening" not in proc.stdout
    # one of them set: the line names only the other
    proc = subprocess.run([GITVOW, "proxy", "--policy", str(path), "--listen-port", str(free_port())],
                          capture_output=True, text=True, timeout=120,
                          env=environment(GITVOW_TEST_UNSET_BOT="s3cret-s3cret"))
    assert proc.returncode == 2 and "GITVOW_TEST_UNSET_TOKEN" in proc.stderr
    assert "GITVOW_TEST_UNSET_BOT" not in proc.stderr


def test_told_to_start_anyway_it_warns_once_per_variable(tmp_path: Path) -> None:
    path = policy(tmp_path)
    port = free_port()
    log = tmp_path / "proxy.log"
    with log.open("w") as out:
        proc = subprocess.Popen([GITVOW, "proxy", "--policy", str(path), "--listen-port", str(port),
                                 "--allow-unset-secrets"], stdout=out, stderr=subprocess.STDOUT, env=environment())
    try:
        deadline = time.monotonic() + 90
        while "listening at" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        text = log.read_text()
        assert "listening at" in text, text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    text = log.read_text()
    assert text.count("GITVOW_TEST_UNSET_TOKEN is not set") == 1, text
    assert text.count("GITVOW_TEST_UNSET_BOT is not set") == 1, text


def test_a_port_in_use_points_at_listen_port(tmp_path: Path) -> None:
    path = policy(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([GITVOW, "proxy", "--policy", str(path), "--listen-port", str(port),
                               "--allow-unset-secrets"], capture_output=True, text=True, timeout=120,
                              env=environment())
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0, said
    assert "address already in use" in said and f"--listen-port {port + 2}" in said, said
    assert "--mode" not in said, said


def test_it_runs_itself_under_python_O_in_the_same_process(tmp_path: Path) -> None:
    """``gitvow proxy`` execs itself under ``python -O`` (mitmproxy's per-message type checks
    off): the same pid, the same arguments after the interpreter's, and no word of running
    without it; SIGTERM still stops it cleanly."""
    path = policy(tmp_path)
    port = free_port()
    log = tmp_path / "proxy.log"
    command = [GITVOW, "proxy", "--policy", str(path), "--listen-port", str(port), "--allow-unset-secrets"]
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment())
    try:
        deadline = time.monotonic() + 90
        while "listening at" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "listening at" in log.read_text(), log.read_text()
        running = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert running[1:] == ["-O", *command], running
    assert code == 0
    assert "without -O" not in log.read_text()
