"""Gemini CLI: ``BeforeTool`` hooks in ``.gemini/settings.json``.

Payload: ``{"session_id", "cwd", "hook_event_name": "BeforeTool", "tool_name", "tool_input",
"mcp_context"?}``; tools ``run_shell_command`` ``{command}``, ``write_file`` ``{file_path,
content}``, ``replace`` ``{file_path, old_string, new_string}`` and MCP tools
``mcp__server__tool`` (``mcp_context`` names the server when the name does not).

Answers are JSON on stdout with exit 0: ``{"decision": "allow"}`` or ``{"decision": "deny",
"reason": …}``. Gemini has no way to ask from a hook, so a confirm is a deny whose reason
says to ask the person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow_gate.agents.base import AgentAdapter, HookAnswer, claude_style_call, cwd_of
from gitvow_gate.call import GateCall, text
from gitvow_gate.decide import ALLOW, GateDecision

TOOLS = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit", "edit": "Edit"}
MATCHER = "run_shell_command|write_file|replace|edit|mcp__.*"


class Gemini(AgentAdapter):
    name = "gemini"
    pre_tool_events = frozenset({"BeforeTool"})
    user_file = ".gemini/settings.json"
    repo_file = ".gemini/settings.json"

    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None:
        if event not in self.pre_tool_events:
            return None
        tool = text(payload.get("tool_name"))
        raw = payload.get("tool_input")
        tool_input = raw if isinstance(raw, Mapping) else {}
        cwd = cwd_of(payload)
        context = payload.get("mcp_context")
        if isinstance(context, Mapping) and not tool.startswith("mcp__"):
            server = text(context.get("server_name")) or "server"
            tool = f"mcp__{server}__{text(context.get('tool_name')) or tool}"
        return [claude_style_call(TOOLS.get(tool, tool), tool_input, cwd)]

    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer:
        if decision.outcome == ALLOW:
            return HookAnswer(0, json.dumps({"decision": "allow"}))
        return HookAnswer(0, json.dumps({"decision": "deny", "reason": decision.message()}))

    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        return "BeforeTool", {"cwd": cwd, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                              "tool_input": {"command": "true"}}

    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        return {
            "BeforeTool": [
                {"matcher": MATCHER,
                 "hooks": [{"name": "gitvow", "type": "command",
                            "command": self.hook_command(command, "BeforeTool"), "timeout": 30000}]}
            ]
        }


ADAPTER = Gemini()
