"""When ``gitvow proxy`` runs itself again under ``python -O``, and when it leaves the process as it is.

The whole proxy under -O is in test_startup.py; here the command it execs, from the
interpreter's own record of how it was started (``sys.orig_argv``).
"""

from __future__ import annotations

import json
import subprocess
import sys

from gitvow_proxy.optimised import optimised_command

SHOW = "import json, sys; from gitvow_proxy.optimised import optimised_command; print(json.dumps(optimised_command()))"


def _command(*python: str, args: tuple[str, ...] = ("proxy", "--policy", "p.toml")) -> list[str] | None:
    out = subprocess.run([sys.executable, *python, "-c", SHOW, *args], capture_output=True, text=True, check=True)
    found: list[str] | None = json.loads(out.stdout)
    return found


def test_gitvow_proxy_is_run_again_with_O_first_and_every_other_argument_kept() -> None:
    assert _command("-X", "utf8") == [sys.executable, "-O", "-X", "utf8", "-c", SHOW, "proxy", "--policy", "p.toml"]


def test_an_optimised_interpreter_is_left_as_it_is() -> None:
    assert _command("-O") is None


def test_another_command_or_code_calling_main_is_left_as_it_is() -> None:
    assert _command(args=("replay", "x")) is None
    assert _command(args=()) is None
    assert optimised_command() is None  # pytest's own process: main() called from Python never execs
