"""Fixtures for the agent gate: an isolated home, a real git repository, the hook as a subprocess."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).with_name("fixtures")
LEGACY_DEFAULT = FIXTURES / "gitvow-0.42.0-default_policy.json"


def gitvow_argv() -> list[str]:
    """The installed ``gitvow`` command of this environment."""
    exe = shutil.which("gitvow", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "gitvow"]


def hook_argv() -> list[str]:
    """The installed ``gitvow-hook`` of this environment, as ``gitvow install`` writes it for an agent."""
    exe = shutil.which("gitvow-hook", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "gitvow_gate.hook_client"]


def installed_hook() -> str:
    """The hook command ``gitvow install`` writes, before the hook's arguments: this environment's
    Python running the client as ``python -I -S -c …`` (:func:`gitvow_gate.hook_client.command_line`)."""
    import gitvow_gate
    from gitvow_gate.hook_client import command_line

    python = os.path.join(os.path.dirname(gitvow_argv()[0]), "python")
    return command_line(python, str(Path(gitvow_gate.__file__).parent.parent))


@dataclass
class Hooked:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture(scope="session")
def policy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One policy cache for the session: it is keyed by content, so sharing it is what users get."""
    return tmp_path_factory.mktemp("policy-cache")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_cache: Path) -> dict[str, str]:
    """A clean environment: a fresh HOME and record directory; no inherited policy.

    The hook decides in-process (``GITVOW_GATE_SERVER=off``), so no test leaves a gate server
    behind; the server's own tests (test_gate_server.py) turn it on, in a directory of their own.
    """
    home = tmp_path / "home"
    home.mkdir()
    values = {
        "HOME": str(home),
        "GITVOW_CACHE_DIR": str(policy_cache),
        "GITVOW_HOME": str(tmp_path / "gitvow-home"),
        "GITVOW_GATE_SERVER": "off",
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for key in ("GITVOW_POLICY", "GITVOW_AGENT", "XDG_CACHE_HOME", "KUBECONFIG"):
        monkeypatch.delenv(key, raising=False)
    return {**os.environ, **values}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """A real git repository on branch ``main`` with an ``origin`` remote."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "remote", "add", "origin", "https://git.example.test/team/app.git")
    return path


@pytest.fixture
def write_policy() -> Callable[..., Path]:
    def write(repo: Path, policy: Mapping[str, Any] | str, name: str = "policy.json") -> Path:
        target = repo / ".gitvow" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(policy if isinstance(policy, str) else json.dumps(policy), encoding="utf-8")
        return target

    return write


@pytest.fixture
def hook(env: dict[str, str]) -> Callable[..., Hooked]:
    """Run ``gitvow-hook --agent AGENT EVENT`` with ``payload`` on stdin, as the agent does."""

    def run(agent: str, event: str, payload: Mapping[str, Any] | str, *, cwd: Path | None = None,
            extra_env: Mapping[str, str] | None = None) -> Hooked:
        stdin = payload if isinstance(payload, str) else json.dumps(payload)
        done = subprocess.run(
            [*hook_argv(), "--agent", agent, event],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd,
            env={**env, **(extra_env or {})},
            timeout=60,
            check=False,
        )
        return Hooked(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def cli(env: dict[str, str]) -> Callable[..., Hooked]:
    def run(*args: str, cwd: Path | None = None, extra_env: Mapping[str, str] | None = None) -> Hooked:
        done = subprocess.run([*gitvow_argv(), *args], capture_output=True, text=True, cwd=cwd,
                              env={**env, **(extra_env or {})}, timeout=60, check=False)
        return Hooked(done.returncode, done.stdout, done.stderr)

    return run


def script(directory: Path, name: str, body: str) -> str:
    """A small Python program (a provider or classifier) as a command line."""
    path = directory / f"{name}.py"
    path.write_text(body, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.fixture
def scripts(tmp_path: Path) -> Iterator[Callable[[str, str], str]]:
    directory = tmp_path / "scripts"
    directory.mkdir()
    yield lambda name, body: script(directory, name, body)
