"""The hook's hot path: with the policy unchanged, no pydantic, no plugin discovery, no proxy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROBE = """
import io, json, sys
sys.stdin = io.StringIO(sys.argv[1])
from gitvow.cli.main import main
code = main(["hook", "--agent", "claude", "PreToolUse"])
heavy = ["pydantic", "pluggy", "mitmproxy", "graphql", "importlib.metadata", "gitvow.plugins", "gitvow.pipeline",
         "gitvow.policy.model", "concurrent.futures", "dataclasses", "typing", "argparse", "subprocess", "threading"]
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}), file=sys.stderr)
"""


def probe(repo: Path, env: dict[str, str], command: str, tool: str = "Bash",
          tool_input: dict[str, Any] | None = None) -> dict[str, Any]:
    env = {**env, "GITVOW_CACHE_DIR": str(repo.parent / "own-cache")}
    payload = json.dumps({"cwd": str(repo), "permission_mode": "default", "tool_name": tool,
                          "tool_input": tool_input if tool_input is not None else {"command": command}})
    done = subprocess.run([sys.executable, "-c", PROBE, payload], capture_output=True, text=True, env=env,
                          cwd=repo, check=False)
    result: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def test_plain_command_with_a_cached_policy_imports_nothing_heavy(repo: Path, env: dict[str, str],
                                                                  write_policy: Callable[..., Path]) -> None:
    write_policy(repo, {"bash_deny": [{"pattern": "rm -rf /", "reason": "no"}], "agents": {"claude": {}}})
    first = probe(repo, env, "ls -la")  # validates the file once and caches it
    assert "pydantic" in first["loaded"]
    again = probe(repo, env, "npm test && ls -la | wc -l")
    assert again == {"code": 0, "loaded": []}
    edit = {"file_path": str(repo / "src" / "app.py"), "old_string": "a", "new_string": "b"}
    assert probe(repo, env, "", "Edit", edit) == {"code": 0, "loaded": []}
    # git that never talks to a remote does not load plugins either
    assert probe(repo, env, "git status && git diff --stat") == {"code": 0, "loaded": []}
    # a forge CLI with an [agents.claude] entry asks the kernel (the engine), from the cached
    # compiled policy and the one adapter its program needs: no loading, no discovery
    probe(repo, env, "git push")  # the first forge command builds the plugin index
    forge = probe(repo, env, "git push")
    assert "gitvow.pipeline" in forge["loaded"]
    assert not {"pydantic", "pluggy", "importlib.metadata", "gitvow.plugins", "gitvow.policy.model",
                "mitmproxy"} & set(forge["loaded"])
