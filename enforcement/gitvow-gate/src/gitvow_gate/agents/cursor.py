"""Cursor: ``beforeShellExecution``, ``beforeMCPExecution`` and ``preToolUse`` in ``.cursor/hooks.json``.

Payloads: ``beforeShellExecution`` ``{"command", "cwd", "workspace_roots", …}``;
``beforeMCPExecution`` ``{"tool_name", "tool_input": "<JSON string>", "url" | "command"}``;
``preToolUse`` ``{"tool_name", "tool_input"}`` with Cursor's tool names (``Write``, ``Edit``,
``StrReplace``, ``Delete``, ``MCP:<tool>``…). Cursor fires ``preToolUse`` for a shell call as
well as ``beforeShellExecution``; the specific hook carries the command, so the generic one
answers allow for shells rather than judging the same call twice.

Answers are always explicit JSON (Cursor counts a silent hook as failed):
``{"permission": "allow" | "ask" | "deny", "user_message", "agent_message"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow_gate.agents.base import AgentAdapter, HookAnswer, as_mapping, claude_style_call, cwd_of, edit_call
from gitvow_gate.call import FileEdit, GateCall, text
from gitvow_gate.decide import ALLOW, DENY, GateDecision

SHELL_TOOLS = frozenset({"Shell", "shell", "run_terminal_cmd", "Terminal"})
EDIT_TOOLS = {"Write": "Write", "write_file": "Write", "Edit": "Edit", "edit_file": "Edit", "StrReplace": "Edit",
              "MultiEdit": "MultiEdit", "Delete": "Edit", "delete_file": "Edit"}
EVENTS = ("beforeShellExecution", "beforeMCPExecution", "preToolUse")


def mcp_name(tool: str, payload: Mapping[str, Any]) -> str:
    """Cursor names MCP tools ``MCP:<tool>`` (or bare) and the server separately."""
    if tool.startswith("mcp__"):
        return tool
    name = tool[4:] if tool.startswith("MCP:") else tool
    server = text(payload.get("mcp_server_name") or payload.get("server_name") or payload.get("server")) or "server"
    return f"mcp__{server}__{name}"


class Cursor(AgentAdapter):
    name = "cursor"
    pre_tool_events = frozenset(EVENTS)
    user_file = ".cursor/hooks.json"
    repo_file = ".cursor/hooks.json"

    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None:
        if event not in self.pre_tool_events:
            return None
        cwd = cwd_of(payload)
        tool = text(payload.get("tool_name"))
        tool_input = as_mapping(payload.get("tool_input"))
        if event == "beforeShellExecution":
            return [GateCall.shell(text(payload.get("command")), cwd)]
        if event == "beforeMCPExecution":
            return [GateCall.mcp(mcp_name(tool, payload), tool_input, cwd)]
        if tool in SHELL_TOOLS:
            return []  # judged by beforeShellExecution, which carries the command
        if tool.startswith(("MCP:", "mcp__")):
            return [GateCall.mcp(mcp_name(tool, payload), tool_input, cwd)]
        if tool in ("Delete", "delete_file"):
            # deleting a file removes every route it declares: the file on disk is the "before"
            path = text(tool_input.get("file_path") or tool_input.get("path") or tool_input.get("target_file"))
            edit = FileEdit(path, "", "", replaces_file=True)
            return [GateCall("edit", "Edit", cwd, edits=(edit,) if path else (), tool_input={"file_path": path})]
        if tool in EDIT_TOOLS:
            return [edit_call(EDIT_TOOLS[tool], tool_input, cwd)]
        return [claude_style_call(tool, tool_input, cwd)]

    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer:
        if decision.outcome == ALLOW:
            return HookAnswer(0, json.dumps({"permission": "allow"}))
        permission = "deny" if decision.outcome == DENY else "ask"
        message = decision.message()
        return HookAnswer(0, json.dumps({"permission": permission, "user_message": message, "agent_message": message}))

    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        return "beforeShellExecution", {"command": "true", "cwd": cwd, "workspace_roots": [cwd]}

    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        return {
            event: [{"command": self.hook_command(command, event), "type": "command", "timeout": 30,
                     "failClosed": True}]
            for event in EVENTS
        }

    def config_defaults(self) -> dict[str, Any]:
        return {"version": 1}


ADAPTER = Cursor()
