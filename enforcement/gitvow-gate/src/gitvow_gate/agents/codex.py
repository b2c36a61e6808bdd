"""Codex CLI: ``PreToolUse`` hooks in ``.codex/hooks.json`` (Claude Code's hook shape).

Payload: ``{"session_id", "cwd", "hook_event_name": "PreToolUse", "tool_name", "tool_input"}``.
Shell calls arrive as ``Bash`` (also ``shell``/``exec_command``), the command a string or an
argv list such as ``["bash", "-lc", "git push"]``. Edits arrive as ``apply_patch`` whose body
(``*** Begin Patch`` …) is split into one edit per file; a shell command that pipes such a
body into ``apply_patch`` is read the same way.

Codex cannot ask a person from a hook, so deny and confirm are both exit 2 with the reason on
stderr; allow is exit 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitvow_gate.agents.base import AgentAdapter, HookAnswer, claude_style_call, command_text, cwd_of, patch_calls
from gitvow_gate.call import GateCall, text
from gitvow_gate.decide import ALLOW, GateDecision
from gitvow_gate.patch import MARKER

SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "container.exec"})
MATCHER = "Bash|shell|exec_command|local_shell|apply_patch|mcp__.*"


def _patch_text(tool_input: Mapping[str, Any]) -> str:
    for key in ("command", "patch", "input"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and MARKER in v), command_text(value))
        if isinstance(value, str) and value:
            return value
    return ""


class Codex(AgentAdapter):
    name = "codex"
    pre_tool_events = frozenset({"PreToolUse"})
    user_file = ".codex/hooks.json"
    repo_file = ".codex/hooks.json"

    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None:
        if event not in self.pre_tool_events:
            return None
        tool = text(payload.get("tool_name"))
        raw = payload.get("tool_input")
        tool_input: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {"command": raw}
        cwd = cwd_of(payload) or text(tool_input.get("workdir"))
        if tool == "apply_patch":
            calls = patch_calls(_patch_text(tool_input), cwd)
            # a patch the gate cannot read is still an edit, and an edit of unknown files is confirmed
            return calls or [GateCall("edit", "Edit", cwd, tool_input=dict(tool_input))]
        if tool in SHELL_TOOLS:
            command = command_text(tool_input.get("command"))
            if MARKER in command:
                calls = patch_calls(command[command.index(MARKER):], cwd)
                return [GateCall.shell(command, cwd), *calls]
            return [GateCall.shell(command, cwd)]
        return [claude_style_call(tool, tool_input, cwd)]

    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer:
        if decision.outcome == ALLOW:
            return HookAnswer(0)
        return HookAnswer(2, stderr=decision.message())

    answer_codes = frozenset({0, 2})

    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        return "PreToolUse", {"cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "true"}}

    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        return {
            "PreToolUse": [
                {"matcher": MATCHER,
                 "hooks": [{"type": "command", "command": self.hook_command(command, "PreToolUse"), "timeout": 30}]}
            ]
        }


ADAPTER = Codex()
