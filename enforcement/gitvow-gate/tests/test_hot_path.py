"""What the agent's hook process imports: the client, the standard library only; the in-process
decision, no pydantic and no plugin discovery while the policy file is unchanged.

The process an agent starts is :mod:`gitvow_gate.hook_client`: it forwards the call to the gate
server and imports nothing of gitvow's engine. When it decides in-process (no server, or one
it cannot trust), the compiled-policy cache and the plugin index keep validation (pydantic)
and discovery (``importlib.metadata``, pluggy) off the call. Speed itself is measured in
benchmarks/bench_hook.py, never here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLIENT = """
import json, sys
before = set(sys.modules)
import gitvow_gate.hook_client
print(json.dumps(sorted(set(sys.modules) - before)))
"""

PROBE = """
import io, json, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from gitvow_gate.hook_client import main
code = main(["--agent", "claude", "PreToolUse"])
heavy = ["pydantic", "pluggy", "mitmproxy", "graphql", "importlib.metadata", "gitvow.plugins",
         "gitvow.policy.model", "gitvow.policy.load", "gitvow_gate.gate_sections", "gitvow.pipeline"]
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}), file=sys.stderr)
"""
#: Never imported by a call decided in-process from the caches: validation and discovery.
SLOW_PATH = {"pydantic", "pluggy", "importlib.metadata", "gitvow.plugins", "gitvow.policy.model",
             "gitvow.policy.load", "gitvow_gate.gate_sections", "mitmproxy", "graphql"}


def test_the_hook_client_imports_the_standard_library_only() -> None:
    done = subprocess.run([sys.executable, "-c", CLIENT], capture_output=True, text=True, check=True)
    added = set(json.loads(done.stdout))
    ours = {m for m in added if m.partition(".")[0] not in sys.stdlib_module_names}
    assert ours == {"gitvow_gate", "gitvow_gate.hook_client"}
    # and of the standard library, nothing the client does not use: no JSON (it forwards the
    # payload as bytes), no regular expressions, no subprocess, no typing, no socket (named pipes)
    # and no enum (which socket would bring)
    assert not {"json", "re", "subprocess", "typing", "dataclasses", "importlib.metadata", "socket", "enum",
                "selectors", "signal", "zlib"} & added, added


def test_under_python_i_s_the_client_adds_os_and_its_own_module_only() -> None:
    """As ``gitvow install`` runs it (``python -I -S -c``): besides ``os`` (and what ``os``
    imports), the client's import adds its own two modules and nothing else."""
    import gitvow_gate

    code = f"import sys;sys.path.insert(0,{str(Path(gitvow_gate.__file__).parent.parent)!r});" + CLIENT
    os_code = "import json,sys;before=set(sys.modules);import os;print(json.dumps(sorted(set(sys.modules)-before)))"
    with_os = set(json.loads(subprocess.run([sys.executable, "-I", "-S", "-c", os_code], capture_output=True,
                                            text=True, check=True).stdout))
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code.replace("import gitvow_gate.hook_client",
                                                                          "import os, gitvow_gate.hook_client")],
                          capture_output=True, text=True, check=True)
    assert set(json.loads(done.stdout)) - with_os - {"os"} == {"gitvow_gate", "gitvow_gate.hook_client"}


def probe(repo: Path, env: dict[str, str], command: str, tool: str = "Bash",
          tool_input: dict[str, Any] | None = None) -> dict[str, Any]:
    env = {**env, "GITVOW_CACHE_DIR": str(repo.parent / "own-cache"), "GITVOW_GATE_SERVER": "off"}
    payload = json.dumps({"cwd": str(repo), "permission_mode": "default", "tool_name": tool,
                          "tool_input": tool_input if tool_input is not None else {"command": command}})
    done = subprocess.run([sys.executable, "-c", PROBE, payload], capture_output=True, text=True, env=env,
                          cwd=repo, check=False)
    result: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def test_in_process_with_a_cached_policy_neither_validates_nor_discovers(repo: Path, env: dict[str, str],
                                                                         write_policy: Callable[..., Path]) -> None:
    write_policy(repo, {"bash_deny": [{"pattern": "rm -rf /", "reason": "no"}], "agents": {"claude": {}}})
    first = probe(repo, env, "ls -la")  # validates the file once and caches it
    assert "pydantic" in first["loaded"]
    plain = [probe(repo, env, "npm test && ls -la | wc -l"),
             probe(repo, env, "", "Edit", {"file_path": str(repo / "src" / "app.py"), "old_string": "a", "new_string": "b"}),
             # git that never talks to a remote does not load plugins either
             probe(repo, env, "git status && git diff --stat")]
    for found in plain:
        assert (found["code"], found["loaded"]) == (0, [])
    # a forge CLI with an [agents.claude] entry asks the engine, from the cached compiled policy
    # and the one adapter its program needs (the plugin index): no validation, no discovery
    for command in ("git push", "gh pr merge 3"):
        probe(repo, env, command)  # the first forge command builds the plugin index
        forge = probe(repo, env, command)
        assert "gitvow.pipeline" in forge["loaded"]
        assert not SLOW_PATH & set(forge["loaded"]), forge
