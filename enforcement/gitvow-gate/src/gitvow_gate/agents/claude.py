"""Claude Code: ``PreToolUse`` hooks in ``.claude/settings.json``.

Payload: ``{"session_id", "cwd", "permission_mode", "hook_event_name": "PreToolUse",
"tool_name": "Bash", "tool_input": {"command": …}}``; tools ``Bash``, ``Edit``, ``MultiEdit``,
``Write``, ``NotebookEdit`` and ``mcp__server__tool``.

Answers: deny is ``permissionDecision: deny`` with the reason. Confirm is Claude Code's own
question (``permissionDecision: ask``) where a person will see it — the prompting permission
modes — and elsewhere (bypass, auto, an agent too old to report its mode) exit 2 with the
reason on stderr, because an ``ask`` nobody sees may be granted unseen. Allow is exit 0 with no
output: an explicit ``allow`` would switch off Claude Code's own permission prompts for the
call, and the gate only ever adds questions, it never removes the agent's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow_gate.agents.base import AgentAdapter, HookAnswer, claude_style_call, cwd_of
from gitvow_gate.call import GateCall, text
from gitvow_gate.decide import ALLOW, DENY, GateDecision

PROMPTING_MODES = frozenset({"default", "acceptEdits", "plan"})
MATCHER = "Bash|Edit|Write|MultiEdit|NotebookEdit|mcp__.*"


class Claude(AgentAdapter):
    name = "claude"
    pre_tool_events = frozenset({"PreToolUse"})
    user_file = ".claude/settings.json"
    repo_file = ".claude/settings.json"

    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None:
        if event not in self.pre_tool_events:
            return None
        tool_input = payload.get("tool_input")
        return [claude_style_call(text(payload.get("tool_name")), tool_input if isinstance(tool_input, Mapping) else {},
                                  cwd_of(payload))]

    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer:
        if decision.outcome == ALLOW:
            return HookAnswer(0)
        message = decision.message()
        if decision.outcome == DENY:
            return HookAnswer(0, _output("deny", message))
        if text(payload.get("permission_mode")) in PROMPTING_MODES:
            return HookAnswer(0, _output("ask", message))
        return HookAnswer(2, stderr=message)

    answer_codes = frozenset({0, 2})

    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        return "PreToolUse", {"cwd": cwd, "permission_mode": "default", "hook_event_name": "PreToolUse",
                              "tool_name": "Bash", "tool_input": {"command": "true"}}

    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        return {
            "PreToolUse": [
                {"matcher": MATCHER, "hooks": [{"type": "command", "command": self.hook_command(command, "PreToolUse")}]}
            ]
        }


def _output(decision: str, reason: str) -> str:
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                "permissionDecisionReason": reason}}
    )


ADAPTER = Claude()
