"""One adapter per agent: its hook payloads in, its answer format out, its config file.

Adapters are imported by name only when a hook for that agent runs, so ``gitvow hook
--agent claude`` never imports the other four.
"""

from __future__ import annotations

import sys

from gitvow_gate.agents.base import AgentAdapter, HookAnswer

__all__ = ["AGENTS", "AgentAdapter", "HookAnswer", "get"]

#: agent name → module defining ``ADAPTER``
AGENTS: dict[str, str] = {
    "claude": "gitvow_gate.agents.claude",
    "codex": "gitvow_gate.agents.codex",
    "cursor": "gitvow_gate.agents.cursor",
    "gemini": "gitvow_gate.agents.gemini",
    "copilot": "gitvow_gate.agents.copilot",
}


def get(name: str) -> AgentAdapter:
    try:
        module = AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; expected one of {', '.join(AGENTS)}") from None
    __import__(module)  # importlib.import_module would import importlib (and warnings) on every hook call
    adapter: AgentAdapter = sys.modules[module].ADAPTER
    return adapter
