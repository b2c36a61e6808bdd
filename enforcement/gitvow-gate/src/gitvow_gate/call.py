"""A tool call as every agent adapter hands it to the gate, whatever the agent called it.

Agents name the same act differently (Claude ``Bash``, Gemini ``run_shell_command``, Copilot
``bash``, Cursor ``beforeShellExecution``; Codex edits through ``apply_patch``); each agent
adapter turns its payload into one :class:`GateCall` per act, and the gate decides on those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

Kind = Literal["shell", "edit", "mcp", "other"]

#: Claude Code's edit tools, the names the policy's ``path_confirm`` and providers refer to.
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class FileEdit:
    """One file an edit touches: its path as the agent gave it, the text removed and added.

    ``replaces_file`` marks a whole-file write, whose "old" text is the file on disk.
    """

    path: str
    old: str = ""
    new: str = ""
    replaces_file: bool = False


@dataclass(frozen=True, slots=True)
class GateCall:
    """One act the agent is about to perform.

    ``tool`` is the Claude-style name (``Bash``, ``Edit``, ``mcp__server__tool``…), ``tool_input``
    the Claude-shaped input handed to the classifier command, ``cwd`` the agent's directory.
    """

    kind: Kind
    tool: str
    cwd: str
    command: str = ""
    edits: tuple[FileEdit, ...] = ()
    mcp_tool: str = ""
    arguments: Mapping[str, Any] = _EMPTY
    tool_input: Mapping[str, Any] = _EMPTY

    @classmethod
    def shell(cls, command: str, cwd: str, tool: str = "Bash") -> GateCall:
        return cls("shell", tool, cwd, command=command, tool_input={"command": command})

    @classmethod
    def mcp(cls, name: str, arguments: Mapping[str, Any], cwd: str) -> GateCall:
        return cls("mcp", name, cwd, mcp_tool=name, arguments=arguments, tool_input=dict(arguments))


def text(value: object) -> str:
    """A payload field as text; non-strings (None, numbers) become empty or their str."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)
