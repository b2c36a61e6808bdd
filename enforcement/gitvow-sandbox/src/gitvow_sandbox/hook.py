"""``gitvow run --hook AGENT``: both enforcement points in force for the agent it starts.

The gate's hook is installed into the sandbox's home (never the operator's) the way ``gitvow
install --agent AGENT --user`` installs it, and reads a copy of the policy that holds only
what the gate reads: the core's keys (without the agents' secret sources) and the gate's
own. The proxy's sections (credentials, secret files, state, admin) stay out of the
sandbox; the copy is read-only inside.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitvow_sandbox.errors import SandboxError
from gitvow_sandbox.layout import RUN_DIR

POLICY = "policy.json"
SECRET_KEYS = ("secret_env", "secret_file")


def gate_policy(data: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the policy the gate reads, without a word about the agents' secrets."""
    from gitvow.plugins import installed
    from gitvow.policy.model import CorePolicy

    gate = {key for section in installed().sections if section.distribution == "gitvow-gate" for key in section.keys}
    keep = set(CorePolicy.model_fields) | gate
    out = {key: value for key, value in data.items() if key in keep}
    agents = out.get("agents")
    if isinstance(agents, Mapping):
        out["agents"] = {name: {k: v for k, v in rule.items() if k not in SECRET_KEYS} if isinstance(rule, Mapping)
                         else rule for name, rule in agents.items()}
    return out


def reachable(home: Path) -> list[Path]:
    """What the hook command needs to run inside: the ``gitvow`` that runs this, its
    virtualenv and the interpreter's installation, where they lie under the operator's home
    or a scratch directory (hidden otherwise, and a hook that is not found refuses every
    tool call). Never the home itself or a directory holding it."""
    import sys

    from gitvow_sandbox.layout import SCRATCH

    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    ran = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if os.path.basename(ran).startswith("gitvow") and os.path.isfile(ran):
        paths.append(Path(os.path.abspath(ran)).parent)
    home = home.resolve()
    out = []
    for path in dict.fromkeys(p.resolve() for p in paths):
        hidden_here = any(path == over or over in path.parents for over in (home, *SCRATCH))
        if hidden_here and path != home and path not in home.parents:
            out.append(path)
    return out


def install(agent: str, data: Mapping[str, Any], *, home: Path, tree: Path, run_dir: Path) -> dict[str, str]:
    """Install the hook for ``agent`` under ``home`` (the sandbox's); the variables it needs inside."""
    try:
        from gitvow_gate.hook_installer import InstallError
        from gitvow_gate.hook_installer import install as install_hook
    except ModuleNotFoundError as exc:
        if exc.name == "gitvow_gate":
            from gitvow.first_party import install_hint

            raise SandboxError("--hook installs gitvow-gate's hook, which is not installed: "
                               + install_hint("gitvow-gate")) from None
        raise
    (run_dir / POLICY).write_text(json.dumps(gate_policy(data), default=str), encoding="utf-8")
    env = {"HOME": str(home), "GITVOW_HOME": str(home / ".gitvow")}
    try:
        install_hook(agent, user=True, repo=str(tree), home=str(home), env=env)
    except (InstallError, ValueError) as exc:
        raise SandboxError(f"--hook {agent}: {exc}") from None
    return {"GITVOW_POLICY": str(RUN_DIR / POLICY)}
