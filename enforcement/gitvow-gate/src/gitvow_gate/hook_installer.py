"""Writing and removing the gate's hook entries in each agent's configuration file.

Install merges gitvow's entries into the file (creating it if needed) and leaves every other
key and hook alone; running it twice equals running it once, because gitvow's own entries —
recognised by their ``python -I -S -c '… gitvow_gate.hook_client …' --agent`` or ``gitvow-hook --agent``
(or older ``gitvow … hook``) command — are replaced,
not added again.
Uninstall removes exactly those entries. When nothing else in the file changed since the
install, it puts back the original bytes (or removes a file gitvow created), so
install + uninstall leaves no trace; the original is kept under ``GITVOW_HOME/install/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitvow.errors import GitvowError
from gitvow_gate import agents, observations
from gitvow_gate.agents.base import HOOK_FAILED
from gitvow_gate.hook_client import command_line

# ``gitvow-hook --agent NAME EVENT`` as this gitvow writes it, ``gitvow hook --agent NAME EVENT``
# as earlier 1.x releases did, and ``gitvow hook EVENT`` as gitvow 0.42 wrote Claude Code's:
# install replaces those entries rather than run two gates.
_OURS = re.compile(r"(^|[\s/\\'])gitvow(\.exe)?'?\s+hook\s|-m\s+gitvow\s+hook\s"
                   r"|(^|[\s/\\'])gitvow-hook(\.exe)?'?\s|-m\s+gitvow_gate\.hook_client\s"
                   r"|;from gitvow_gate\.hook_client import main;")


class InstallError(GitvowError):
    """A config file gitvow cannot safely edit (not JSON, not an object)."""


def executable() -> str:
    """The hook client this install runs (:mod:`gitvow_gate.hook_client`), by absolute path,
    quoted for a shell: the one beside the ``gitvow`` that runs the install.

    Where that ``gitvow`` has its Python beside it (a virtualenv's ``bin/``), the client is run
    by that Python as ``python -I -S -c …`` (:func:`gitvow_gate.hook_client.command_line`):
    no ``site`` processing and no console-script template, the cheapest start a Python
    hook can have. Otherwise the ``gitvow-hook`` console script beside it.

    Never the bare name: an agent's hook shell may not have this virtualenv on its ``PATH``,
    and a hook that is not found gates nothing. Repository installs too — the wrapper around
    it turns a path that is wrong on another machine into a refusal, never into an allow.
    """
    ran = sys.argv[0] if sys.argv and sys.argv[0] else ""
    scripts = os.path.dirname(os.path.abspath(ran)) if ran else ""
    beside = os.path.join(scripts, "gitvow-hook") if ran else ""
    python = os.path.join(scripts, "python")
    if os.path.basename(ran).startswith("gitvow") and os.path.isfile(beside) and os.path.isfile(python):
        import gitvow_gate

        return command_line(python, os.path.dirname(os.path.dirname(os.path.abspath(gitvow_gate.__file__))))
    if os.path.basename(ran).startswith("gitvow") and os.path.isfile(beside):
        return shlex.quote(beside)
    found = shutil.which("gitvow-hook", path=os.path.dirname(sys.executable)) or shutil.which("gitvow-hook")
    if found:
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m gitvow_gate.hook_client"


def probe(agent: str, *, cwd: str, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Run the hook command as installed, through a shell as the agent does, on a harmless call.

    Returns whether it answered in the agent's protocol (any answer but the wrapper's own
    refusal) and one line saying what it did.
    """
    adapter = agents.get(agent)
    event, payload = adapter.probe(cwd)
    command = adapter.hook_command(executable(), event)
    start = time.monotonic()
    try:
        done = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                              cwd=cwd, env=None if env is None else dict(env), timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"the installed hook could not be run: {exc}"
    took = (time.monotonic() - start) * 1000
    output = done.stdout + done.stderr
    if HOOK_FAILED in output or done.returncode not in adapter.answer_codes:
        detail = (done.stderr.strip().splitlines() or [""])[0][:200]
        return False, f"the installed hook does not answer (exit {done.returncode}{': ' + detail if detail else ''})"
    allowed = done.returncode == 0 and done.stdout.strip() == adapter.allow(payload).stdout.strip()
    said = "allow" if allowed else "an answer other than allow (see `gitvow check -- true`)"
    return True, f"probe: the installed hook answered {said} for a plain `true` in {took:.0f} ms"


def is_ours(entry: Any) -> bool:
    if not isinstance(entry, Mapping):
        return False
    commands = [entry.get("command"), entry.get("bash")]
    for hook in entry.get("hooks") or []:
        if isinstance(hook, Mapping):
            commands.append(hook.get("command"))
    return any(isinstance(c, str) and _OURS.search(c) for c in commands)


def config_path(agent: str, *, user: bool, repo: str, home: str) -> Path:
    adapter = agents.get(agent)
    return Path(home, adapter.user_file) if user else Path(repo, adapter.repo_file)


def _state_path(path: Path, env: Mapping[str, str] | None) -> Path:
    key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32]
    return Path(observations.home(env), "install", key + ".json")


def _read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise InstallError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise InstallError(f"{path}: not valid JSON ({exc}); fix or move it, then install again") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path}: expected a JSON object at the top level")
    return raw, data


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".gitvow-tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def install(agent: str, *, user: bool, repo: str, home: str, env: Mapping[str, str] | None = None) -> str:
    adapter = agents.get(agent)
    path = config_path(agent, user=user, repo=repo, home=home)
    raw, data = _read(path)
    state = _state_path(path, env)
    if not state.exists():
        state.parent.mkdir(parents=True, exist_ok=True)
        original = {"path": str(path), "existed": raw is not None, "content": raw.decode("utf-8") if raw else ""}
        state.write_text(json.dumps(original), encoding="utf-8")
    for key, value in adapter.config_defaults().items():
        data.setdefault(key, value)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' is not an object; gitvow will not rewrite it")
    for event, entries in adapter.hook_entries(executable()).items():
        current = hooks.get(event)
        existing: list[Any] = current if isinstance(current, list) else []
        hooks[event] = [e for e in existing if not is_ours(e)] + entries
    before = json.loads(raw.decode("utf-8")) if raw and raw.strip() else None
    if before == data:
        return f"{path}: gitvow's {agent} hooks already installed"
    _write(path, data)
    return f"{path}: installed gitvow's {agent} hooks"


def strip(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without gitvow's hook entries, events left empty, or a ``hooks`` left empty."""
    out = dict(data)
    hooks = out.get("hooks")
    if isinstance(hooks, dict):
        kept_hooks: dict[str, Any] = {}
        for event, entries in hooks.items():
            if isinstance(entries, list):
                kept = [e for e in entries if not is_ours(e)]
                if kept:
                    kept_hooks[event] = kept
            else:
                kept_hooks[event] = entries
        if kept_hooks:
            out["hooks"] = kept_hooks
        else:
            del out["hooks"]
    return out


def uninstall(agent: str, *, user: bool, repo: str, home: str, env: Mapping[str, str] | None = None) -> str:
    adapter = agents.get(agent)
    path = config_path(agent, user=user, repo=repo, home=home)
    raw, data = _read(path)
    state = _state_path(path, env)
    if raw is None:
        state.unlink(missing_ok=True)
        return f"{path}: nothing to remove"
    stripped = strip(data)
    try:
        original: dict[str, Any] | None = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        original = None
    state.unlink(missing_ok=True)
    if original is not None:
        # "Nothing else changed" means: apart from gitvow's entries (ours, or an older gitvow's
        # that install replaced) and the keys install adds, the file is what it was.
        content = str(original.get("content", ""))
        try:
            before = json.loads(content) if original.get("existed") and content.strip() else {}
        except ValueError:
            before = None
        if isinstance(before, dict):
            comparable = dict(stripped)
            for key, value in adapter.config_defaults().items():
                if key not in before and comparable.get(key) == value:
                    del comparable[key]
            if strip(before) == comparable:
                if not original.get("existed"):
                    path.unlink()
                    return f"{path}: removed (gitvow had created it)"
                path.write_text(content, encoding="utf-8")
                return f"{path}: restored as it was before install"
    _write(path, stripped)
    return f"{path}: removed gitvow's {agent} hooks"
