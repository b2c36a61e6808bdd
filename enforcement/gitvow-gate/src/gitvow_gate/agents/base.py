"""What every agent adapter provides, and the pieces several of them share."""

from __future__ import annotations

import json
import os
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitvow_gate.call import FileEdit, GateCall, text
from gitvow_gate.decide import ALLOW, DENY, GateDecision
from gitvow_gate.patch import parse

#: What an agent is told when the hook command itself failed (gone, crashed).
HOOK_FAILED = "gitvow hook could not run (the gitvow-hook executable is missing or broken)"


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the hook process does: exit with ``code``, print ``stdout`` and ``stderr``."""

    code: int
    stdout: str = ""
    stderr: str = ""


class AgentAdapter(ABC):
    """An agent's hook protocol.

    ``normalize`` returns None for an event the gate does not judge (the hook then answers
    ``allow`` in the agent's format), else one :class:`GateCall` per act — a Codex patch
    touching three files is three calls. ``render`` answers in the agent's own format,
    always explicitly where the agent counts silence as failure.
    """

    name: str
    #: Hook events that come before a tool runs.
    pre_tool_events: frozenset[str]
    #: Config file relative to the home directory (user install) and to the repository.
    user_file: str
    repo_file: str

    @abstractmethod
    def normalize(self, event: str, payload: Mapping[str, Any]) -> list[GateCall] | None: ...

    @abstractmethod
    def render(self, decision: GateDecision, payload: Mapping[str, Any]) -> HookAnswer: ...

    @abstractmethod
    def hook_entries(self, command: str) -> dict[str, list[dict[str, Any]]]:
        """The ``hooks`` entries to merge into the config file, per event (``command`` is the executable)."""

    def hook_command(self, executable: str, event: str) -> str:
        """The shell command the agent runs for ``event``: the hook, wrapped so that it never fails open.

        An agent runs a hook command through a shell and reads its exit status and output. A
        ``gitvow`` that is gone (exit 127), crashes (1) or answers outside the protocol would
        otherwise be, for Claude Code and others, a non-blocking hook error: the tool call
        runs. So any exit outside :attr:`answer_codes` is turned into this agent's own refusal,
        printed by the shell itself, which needs nothing of gitvow.
        """
        refusal = self.render(GateDecision(DENY, f"{HOOK_FAILED}; the call is refused until `gitvow install "
                                                 f"--agent {self.name}` is run again", "hook"), {})
        codes = "|".join(str(code) for code in sorted(self.answer_codes))
        fallback = []
        if refusal.stderr:
            fallback.append(f"printf '%s\\n' {shlex.quote(refusal.stderr)} >&2")
        if refusal.stdout:
            fallback.append(f"printf '%s\\n' {shlex.quote(refusal.stdout)}")
        fallback.append(f"exit {refusal.code}")
        return (f"{executable} --agent {self.name} {event}; s=$?; case $s in {codes}) exit $s;; esac; "
                + "; ".join(fallback))

    #: Exit codes of a hook that answered (claude and codex answer with exit 2 too); any other
    #: exit — 127 for a ``gitvow`` that is gone, 1 for one that crashed — is a hook that failed.
    answer_codes: frozenset[int] = frozenset({0})

    @abstractmethod
    def probe(self, cwd: str) -> tuple[str, dict[str, Any]]:
        """The event and payload of a harmless shell call (``true``), to prove an installed hook answers."""

    def config_defaults(self) -> dict[str, Any]:
        """Top-level keys a new config file needs besides ``hooks`` (Cursor's ``version``)."""
        return {}

    def allow(self, payload: Mapping[str, Any]) -> HookAnswer:
        return self.render(GateDecision(ALLOW), payload)


def cwd_of(payload: Mapping[str, Any]) -> str:
    roots = payload.get("workspace_roots")
    first_root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""
    return text(payload.get("cwd")) or first_root


def as_mapping(value: Any) -> dict[str, Any]:
    """A tool input that may arrive as an object or as a JSON string (Copilot, Cursor MCP)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return dict(parsed) if isinstance(parsed, dict) else {}
    return {}


def command_text(value: Any) -> str:
    """A shell command given as a string or as an argv list (Codex ``["bash", "-lc", "…"]``)."""
    if isinstance(value, list):
        return shlex.join(str(v) for v in value)
    return text(value)


def claude_style_call(tool: str, tool_input: Mapping[str, Any], cwd: str) -> GateCall:
    """A Claude Code tool call (the shape Codex and Gemini hooks mostly share)."""
    if tool == "Bash":
        return GateCall.shell(command_text(tool_input.get("command")), cwd)
    if tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        return edit_call(tool, tool_input, cwd)
    if tool.startswith("mcp__"):
        return GateCall.mcp(tool, tool_input, cwd)
    return GateCall("other", tool, cwd, tool_input=dict(tool_input))


def edit_call(tool: str, tool_input: Mapping[str, Any], cwd: str) -> GateCall:
    """Edit/Write/MultiEdit/NotebookEdit input (any agent's field spellings) → one edit call."""
    path = text(
        tool_input.get("file_path")
        or tool_input.get("path")
        or tool_input.get("filePath")
        or tool_input.get("notebook_path")
        or tool_input.get("target_file")
    )
    if tool == "MultiEdit":
        raw = tool_input.get("edits")
        edits: list[Any] = raw if isinstance(raw, list) else []
        old = "\n".join(text(e.get("old_string")) for e in edits if isinstance(e, Mapping))
        new = "\n".join(text(e.get("new_string")) for e in edits if isinstance(e, Mapping))
        edit = FileEdit(path, old, new)
    elif tool == "Write":
        content = tool_input.get("content", tool_input.get("file_text", tool_input.get("new_content")))
        edit = FileEdit(path, "", text(content), replaces_file=True)
    elif tool == "NotebookEdit":
        mode = text(tool_input.get("edit_mode")) or "replace"
        old = "" if mode == "insert" else notebook_cell(path, cwd, text(tool_input.get("cell_id")))
        edit = FileEdit(path, old, "" if mode == "delete" else text(tool_input.get("new_source")))
    else:
        old = tool_input.get("old_string", tool_input.get("old_str"))
        new = tool_input.get("new_string", tool_input.get("new_str"))
        edit = FileEdit(path, text(old), text(new))
    normalized = {"file_path": path, **{k: v for k, v in tool_input.items() if k != "file_path"}}
    return GateCall("edit", tool, cwd, edits=(edit,) if path else (), tool_input=normalized)


def notebook_cell(path: str, cwd: str, cell_id: str) -> str:
    """The current source of one notebook cell, so a replaced or deleted cell's routes count as removed."""
    if not path or not cell_id:
        return ""
    full = path if path.startswith("/") else f"{cwd}/{path}"
    try:
        if os.path.getsize(full) > 4 * 1024 * 1024:
            return ""
        with open(full, encoding="utf-8") as fh:
            notebook = json.load(fh)
        for cell in notebook.get("cells", []):
            if isinstance(cell, dict) and cell.get("id") == cell_id:
                source = cell.get("source", "")
                return "".join(source) if isinstance(source, list) else text(source)
    except (OSError, ValueError, AttributeError, TypeError):
        return ""
    return ""


def patch_calls(patch: str, cwd: str, tool: str = "apply_patch") -> list[GateCall]:
    """A Codex ``apply_patch`` body → one edit call per file it adds, updates, deletes or moves to.

    The calls keep the agent's tool name (providers are told the tool the agent is about to
    run); their ``tool_input`` is Claude Code's Edit shape, as gitvow 0.42 handed it on.
    """
    calls = []
    for change in parse(patch):
        edit = FileEdit(change.path, change.old, change.new, replaces_file=change.op == "delete")
        calls.append(
            GateCall("edit", tool, cwd, edits=(edit,),
                     tool_input={"file_path": change.path, "old_string": change.old, "new_string": change.new,
                                 "apply_patch_op": change.op, "tool": tool})
        )
    return calls
