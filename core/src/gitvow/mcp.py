"""Reading an MCP tool name: the one splitter every adapter's tool-call classifier uses.

Agents report an MCP tool as ``mcp__<server>__<tool>`` (Claude Code, Codex, Gemini; the gate
rewrites Cursor's and Copilot's spellings into it); some name a tool bare (``create_issue``).
The server key is whatever the user called the server in the agent's configuration, so an
adapter recognises its own by a word in it (``github``, ``gitlab``, ``linear``).
Dependency-free: the agent hook imports it on its forge stage.
"""

from __future__ import annotations

PREFIX = "mcp__"
SEPARATOR = "__"


def split_tool(tool: str) -> tuple[str | None, str]:
    """``(server, tool)``: ``mcp__github__create_issue`` → ``("github", "create_issue")``.

    A name without the ``mcp__SERVER__`` shape is bare: server None, the name as given. The
    tool part keeps any further ``__`` (``mcp__s__a__b`` → ``("s", "a__b")``); either part may
    be empty (``mcp____x`` → ``("", "x")``), which each caller refuses as it sees fit.
    """
    if tool.startswith(PREFIX):
        server, sep, name = tool[len(PREFIX) :].partition(SEPARATOR)
        if sep:
            return server, name
    return None, tool
