"""install writes each agent's hook configuration; twice equals once; uninstall restores the file."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Hooked, gitvow_argv, hook_argv, installed_hook

FILES = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "cursor": ".cursor/hooks.json",
         "gemini": ".gemini/settings.json", "copilot": ".github/hooks/gitvow.json"}
USER_FILES = {**FILES, "copilot": ".copilot/hooks/gitvow.json"}


def commands(config: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for entries in config.get("hooks", {}).values():
        for entry in entries:
            found += [h["command"] for h in entry.get("hooks", [])]
            found += [entry[k] for k in ("command", "bash") if k in entry]
    return found


@pytest.mark.parametrize("agent", sorted(FILES))
def test_repository_install_is_idempotent_and_uninstall_restores(repo: Path, cli: Callable[..., Hooked],
                                                                 agent: str) -> None:
    path = repo / FILES[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = '{\n    "theme": "dark",\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}\n}\n'
    path.write_text(original, encoding="utf-8")
    installed = cli("install", "--agent", agent, cwd=repo)
    assert installed.code == 0, installed.stderr
    assert "probe: the installed hook answered allow" in installed.stdout
    once = path.read_text(encoding="utf-8")
    config = json.loads(once)
    assert config["theme"] == "dark" and "say done" in commands(config)
    ours = [c for c in commands(config) if " --agent " in c]
    assert ours and all(c.startswith(f"{installed_hook()} --agent {agent} ") for c in ours)
    assert cli("install", "--agent", agent, str(repo)).code == 0
    assert path.read_text(encoding="utf-8") == once
    removed = cli("uninstall", "--agent", agent, cwd=repo)
    assert removed.code == 0 and "restored" in removed.stdout
    assert path.read_text(encoding="utf-8") == original


def test_uninstall_removes_a_file_install_created(repo: Path, cli: Callable[..., Hooked]) -> None:
    cli("install", "--agent", "cursor", cwd=repo)
    config = json.loads((repo / ".cursor/hooks.json").read_text())
    assert config["version"] == 1 and set(config["hooks"]) == {"beforeShellExecution", "beforeMCPExecution",
                                                                 "preToolUse"}
    cli("uninstall", "--agent", "cursor", cwd=repo)
    assert not (repo / ".cursor/hooks.json").exists()


def test_uninstall_keeps_what_the_user_added_since(repo: Path, cli: Callable[..., Hooked]) -> None:
    cli("install", "--agent", "claude", cwd=repo)
    path = repo / ".claude/settings.json"
    config = json.loads(path.read_text())
    config["model"] = "opus"
    path.write_text(json.dumps(config))
    cli("uninstall", "--agent", "claude", cwd=repo)
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_user_install_names_the_executable_by_absolute_path(env: dict[str, str], cli: Callable[..., Hooked]) -> None:
    assert cli("install", "--agent", "claude", "--user").code == 0
    config = json.loads(Path(env["HOME"], USER_FILES["claude"]).read_text())
    (command,) = commands(config)
    executable = command.split(" --agent ")[0]
    assert executable == installed_hook()
    python, *flags = shlex.split(executable)[:3]
    assert Path(python).is_absolute() and flags == ["-I", "-S"]
    assert command.startswith(f"{executable} --agent claude PreToolUse; ")
    cli("uninstall", "--agent", "claude", "--user")
    assert not Path(env["HOME"], USER_FILES["claude"]).exists()


def test_installed_command_gates(repo: Path, cli: Callable[..., Hooked], env: dict[str, str]) -> None:
    """The command install wrote, run as the agent would, answers."""
    import subprocess

    cli("install", "--agent", "gemini", "--user")
    config = json.loads(Path(env["HOME"], USER_FILES["gemini"]).read_text())
    (command,) = commands(config)
    payload = {"cwd": str(repo), "tool_name": "run_shell_command", "tool_input": {"command": "git push --force"}}
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                          env=env, check=False)
    assert json.loads(done.stdout)["decision"] == "deny"


def test_a_config_that_is_not_json_is_left_alone(repo: Path, cli: Callable[..., Hooked]) -> None:
    path = repo / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text("{ not json", encoding="utf-8")
    answer = cli("install", "--agent", "claude", cwd=repo)
    assert answer.code == 1 and "not valid JSON" in answer.stderr
    assert path.read_text(encoding="utf-8") == "{ not json"


def test_install_replaces_the_old_tools_pre_tool_entry_and_uninstall_puts_it_back(
        repo: Path, cli: Callable[..., Hooked]) -> None:
    path = repo / ".claude/settings.json"
    path.parent.mkdir()
    old = {"hooks": {
        "PreToolUse": [{"matcher": "Bash|Edit|Write|MultiEdit|NotebookEdit|mcp__.*",
                        "hooks": [{"type": "command", "command": "/opt/old/bin/gitvow hook PreToolUse"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "/opt/old/bin/gitvow hook Stop"}]}],
    }}
    original = json.dumps(old, indent=1) + "\n"
    path.write_text(original, encoding="utf-8")
    cli("install", "--agent", "claude", cwd=repo)
    config = json.loads(path.read_text())
    pre = [h["command"] for e in config["hooks"]["PreToolUse"] for h in e["hooks"]]
    assert len(pre) == 1 and f"{installed_hook()} --agent claude PreToolUse;" in pre[0]  # one gate, not two
    cli("uninstall", "--agent", "claude", cwd=repo)
    assert path.read_text(encoding="utf-8") == original


@pytest.mark.parametrize("agent", sorted(FILES))
@pytest.mark.parametrize("breakage", ["removed", "broken"])
@pytest.mark.parametrize("form", ["gitvow-hook", "python -I -S"])
def test_a_missing_or_broken_gitvow_blocks_the_next_tool_call(tmp_path: Path, repo: Path, env: dict[str, str],
                                                               agent: str, breakage: str, form: str) -> None:
    """Install from a gitvow of its own, then take it away: the agent's next call is refused.

    ``gitvow-hook``: a scripts directory with the console scripts only, so install names
    ``gitvow-hook``. ``python -I -S``: a virtualenv of its own (its ``pyvenv.cfg``, its ``python``,
    this environment's ``lib``), so install names its ``python``; that is what is taken away.
    """
    import os
    import shutil
    import subprocess

    from .test_agreement import hook_decision, shell_payload

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the console scripts: their #! names this environment's python
    installer = bin_dir / "gitvow"
    shutil.copy2(gitvow_argv()[0], installer)
    own = bin_dir / "gitvow-hook"
    shutil.copy2(hook_argv()[0], own)
    if form == "python -I -S":
        venv = Path(gitvow_argv()[0]).parent.parent
        shutil.copy2(venv / "pyvenv.cfg", tmp_path / "pyvenv.cfg")
        (tmp_path / "lib").symlink_to(venv / "lib")
        own = bin_dir / "python"
        own.symlink_to(os.path.realpath(venv / "bin" / "python"))
    installed = subprocess.run([str(installer), "install", "--agent", agent], cwd=repo, env=env, capture_output=True,
                               text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    assert "probe: the installed hook answered allow" in installed.stdout
    event = shell_payload(agent, "true", repo)[0]
    (command,) = [c for c in commands(json.loads((repo / FILES[agent]).read_text())) if f" {event};" in c]
    assert command.startswith(f"{own} --agent {agent} {event}; " if form == "gitvow-hook" else f"{own} -I -S -c ")

    def run(line: str) -> str:
        """The agent runs the hook command through a shell, with the call on stdin."""
        payload = shell_payload(agent, line, repo)[1]
        done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                              cwd=repo, env=env, check=False)
        return hook_decision(agent, Hooked(done.returncode, done.stdout, done.stderr))

    assert run("ls -la") == "allow"
    assert run("rm -rf /") == "deny"
    if breakage == "removed":
        own.unlink()
    else:
        own.unlink()
        own.write_text("#!/bin/sh\necho 'Traceback (most recent call last): ImportError' >&2\nexit 1\n",
                       encoding="utf-8")
        own.chmod(0o755)
    assert run("ls -la") == "deny"
