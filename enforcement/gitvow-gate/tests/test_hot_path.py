"""The hook's hot path: with the policy unchanged, no pydantic, no plugin discovery, no proxy.

Speed is guarded by what is imported, never by timings: the standard-library modules that
cost the hook most (dataclasses and the inspect/ast/dis it pulls in, typing, urllib.parse and
ipaddress, contextlib, importlib, threading, hashlib) are refused on the forge path too, and
the count of modules each path adds is bounded, so a new import shows up here first
(docs/benchmarks.md, "Agent hook").
"""

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
before = set(sys.modules)
from gitvow.cli.main import main
code = main(["hook", "--agent", "claude", "PreToolUse"])
heavy = ["pydantic", "pluggy", "mitmproxy", "graphql", "importlib.metadata", "gitvow.plugins", "gitvow.pipeline",
         "gitvow.policy.model", "concurrent.futures", "argparse", "subprocess", "threading",
         "urllib.parse", "ipaddress", "hashlib", "base64", "logging"]
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules],
                  "added": len(set(sys.modules) - before)}), file=sys.stderr)
"""
#: The most modules a path may add to the interpreter's own (the probe's json and re already
#: loaded): a plain command ~25 today, a forge command ~60 (the kernel and one adapter).
MAX_ADDED_PLAIN = 60
MAX_ADDED_FORGE = 110
#: What the forge path must still never import, beyond the plugin machinery.
FORGE_FORBIDDEN = {"pydantic", "pluggy", "importlib.metadata", "gitvow.plugins", "gitvow.policy.model", "mitmproxy",
                   "urllib.parse", "ipaddress", "contextlib", "importlib",
                   "threading", "hashlib", "base64", "copy", "logging"}


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
    plain = [probe(repo, env, "npm test && ls -la | wc -l"),
             probe(repo, env, "", "Edit", {"file_path": str(repo / "src" / "app.py"), "old_string": "a", "new_string": "b"}),
             # git that never talks to a remote does not load plugins either
             probe(repo, env, "git status && git diff --stat")]
    for found in plain:
        assert (found["code"], found["loaded"]) == (0, [])
        assert found["added"] <= MAX_ADDED_PLAIN, found
    # a forge CLI with an [agents.claude] entry asks the kernel (the engine), from the cached
    # compiled policy and the one adapter its program needs: no loading, no discovery
    for command in ("git push", "gh pr merge 3"):
        probe(repo, env, command)  # the first forge command builds the plugin index
        forge = probe(repo, env, command)
        assert "gitvow.pipeline" in forge["loaded"]
        assert not FORGE_FORBIDDEN & set(forge["loaded"]), forge
        assert forge["added"] <= MAX_ADDED_FORGE, forge

