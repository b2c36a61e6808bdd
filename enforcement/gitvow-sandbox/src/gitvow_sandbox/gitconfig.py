"""The sandbox's ``~/.gitconfig``: the operator's identity and what the sandbox needs, nothing else.

The operator's own ``~/.gitconfig`` stays outside (it may name credential helpers, tokens in
``url.*.insteadOf``, programs under the home). Hiding it by making it unreadable breaks git
(an unreadable global configuration is fatal), so the sandbox's home gets a generated one:
``user.name``, ``user.email`` and ``init.defaultBranch``, taken from the operator's git unless
``[sandbox] git_user_name``, ``git_user_email``, ``git_default_branch`` say otherwise, plus
the proxy and its CA bundle for git's HTTP.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: The keys copied from the operator's configuration, and the ``[sandbox]`` key overriding each.
KEYS = {"user.name": "git_user_name", "user.email": "git_user_email", "init.defaultbranch": "git_default_branch"}
FILE = "gitconfig"


def operators(home: Path) -> dict[str, str]:
    """The operator's values of :data:`KEYS`, as their git reads them (includes followed)."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    if not ((home / ".gitconfig").is_file() or (xdg / "git" / "config").is_file()):
        return {}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}
    try:
        done = subprocess.run(["git", "config", "--global", "--includes", "-z", "--get-regexp",
                               "^(user\\.name|user\\.email|init\\.defaultbranch)$"],
                              capture_output=True, env=env, timeout=30, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values: dict[str, str] = {}
    for item in done.stdout.decode(errors="replace").split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() in KEYS:
            values[key.lower()] = value
    return values


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def render(values: Mapping[str, str], env: Mapping[str, str]) -> str:
    """The file's text: ``values`` (of :data:`KEYS`), and git's HTTP pointed at the proxy and its CA bundle."""
    sections: dict[str, dict[str, str]] = {}
    for key, value in values.items():
        section, _, name = key.rpartition(".")
        sections.setdefault(section, {})[{"defaultbranch": "defaultBranch"}.get(name, name)] = value
    proxy = env.get("HTTPS_PROXY") or env.get("https_proxy")
    if proxy:
        sections.setdefault("http", {})["proxy"] = proxy
    bundle = env.get("GIT_SSL_CAINFO") or env.get("SSL_CERT_FILE")
    if bundle:
        sections.setdefault("http", {})["sslCAInfo"] = bundle
    return "".join(f"[{section}]\n" + "".join(f"\t{name} = {_quoted(value)}\n" for name, value in items.items())
                   for section, items in sections.items())


def write(run_dir: Path, home: Path, overrides: Mapping[str, str | None], env: Mapping[str, str]) -> Path:
    """Write the sandbox's ``~/.gitconfig`` into the run's directory; its path there."""
    values = operators(home) if any(overrides.get(setting) is None for setting in KEYS.values()) else {}
    for key, setting in KEYS.items():
        given = overrides.get(setting)
        if given is not None:
            values[key] = given
    path = run_dir / FILE
    path.write_text(render(values, env), encoding="utf-8")
    return path
