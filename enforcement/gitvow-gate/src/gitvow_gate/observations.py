"""Where ``when: observe`` findings go: one JSON line each, appended, nobody asked.

The line names the agent, the tool, the rule's reason and the repository — never the command
line or file contents, which may carry secrets. ``GITVOW_HOME`` (default ``~/.gitvow``)
holds ``observed.jsonl``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence


def home(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("GITVOW_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gitvow")


def observed(reasons: Sequence[str], *, agent: str, tool: str, cwd: str, env: Mapping[str, str] | None = None) -> None:
    if not reasons:
        return
    path = os.path.join(home(env), "observed.jsonl")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = "".join(
        json.dumps({"at": stamp, "agent": agent, "tool": tool, "cwd": cwd, "observed": reason}) + "\n"
        for reason in reasons
    )
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(lines)
    except OSError:
        pass  # a record that cannot be written never blocks the call it records
