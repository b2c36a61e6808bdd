"""GitHub Copilot CLI: ``preToolUse`` hooks in ``.github/hooks/*.json`` or ``~/.copilot/hooks/``.

Payload: ``{"timestamp", "cwd", "toolName", "toolArgs"}`` where ``toolArgs`` is a JSON
*string* (an object is accepted too). Tools: ``bash``/``powershell`` ``{command}``,
``edit``/``str_replace_editor`` ``{path, old_str, new_str}``, ``create`` ``{path,
file_text}``, ``apply_patch`` (a Codex-style patch), ``write`` and MCP tools.

Answers are always explicit JSON: ``{"permissionDecision": "allow" | "ask" | "deny",
"permissionDecisionReason": …}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow_gate.agents.base import AgentAdapter, HookAnswer, as_mapping, command_text, cwd_of, edit_call, patch_calls
from gitvow_gate.call import GateCall, text
from gitvow_gate.decide import ALLOW, DENY, GateDecision
from gitvow_gate.patch import MARKER

SHELL_TOOLS = frozenset({"bash", "powershell", "shell"})
EDIT_TOOLS = {"edit": "Edit", "str_replace_editor": "Edit", "str_replace": "Edit", "create": "Write", "write": "Write"}


class Copilot(AgentAdapter):
    name = "copilot"
    pre_tool_events = frozenset({"preToolUse"})
    user_file = ".copilot/hooks/gitvow.json"
    repo_file = ".github/hooks/gitvow.json"

    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None:
        if event not in self.pre_tool_events:
            return None
        cwd = cwd_of(payload)
        tool = text(payload.get("toolName") or payload.get("tool_name"))
        raw = payload.get("toolArgs", payload.get("tool_input"))
        args = as_mapping(raw)
        if tool in SHELL_TOOLS:
            return [GateCall.shell(command_text(args.get("command") or args.get("cmd")), cwd)]
        if tool == "apply_patch":
            # toolArgs is the patch itself, or (a JSON object, as text or not) holds it in input/patch
            body = text(args.get("input") or args.get("patch"))
            if not body and isinstance(raw, str) and MARKER in raw:
                body = raw
            calls = patch_calls(body, cwd)
            return calls or [GateCall("edit", "Edit", cwd, tool_input=args)]
        if tool in EDIT_TOOLS:
            return [edit_call(EDIT_TOOLS[tool], args, cwd)]
        if tool.startswith("mcp__"):
            return [GateCall.mcp(tool, args, cwd)]
        return [GateCall("other", tool, cwd, tool_input=args)]

    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer:
        if decision.outcome == ALLOW:
            return HookAnswer(0, json.dumps({"permissionDecision": "allow"}))
        permission = "deny" if decision.outcome == DENY else "ask"
        return HookAnswer(0, json.dumps({"permissionDecision": permission,
                                         "permissionDecisionReason": decision.message()}))

    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        return "preToolUse", {"cwd": cwd, "toolName": "bash", "toolArgs": json.dumps({"command": "true"})}

    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        return {"preToolUse": [{"type": "command", "bash": self.hook_command(command, "preToolUse"),
                                "timeoutSec": 30}]}

    def config_defaults(self) -> dict[str, Any]:
        return {"version": 1}


ADAPTER = Copilot()
