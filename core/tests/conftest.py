from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest


def run_gitvow(
    args: Sequence[str], *, stdin: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed ``gitvow`` command, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def gitvow_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_gitvow
