"""Reading an MCP tool name: the one splitter every adapter's tool-call classifier uses.

Agents report an MCP tool as ``mcp__<server>__<tool>`` (Claude Code, Codex, Gemini; the gate
rewrites Cursor's and Copilot's spellings into it); some name a tool bare (``create_issue``).
The server key is whatever the user called the server in the agent's configuration, so an
adapter recognises its own by a word in it (``github``, ``gitlab``, ``linear``).
Dependency-free: the agent hook imports it on its forge stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gitvow.change import Change

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


def created_branch(name: str, arguments: Mapping[str, object]) -> Change | None:
    """A ``create_branch`` tool's branch (``arguments["branch"]``), judged by ``[branches]`` as
    the proxy judges the request the server sends; None for any other tool (GitLab's and
    Gitea's MCP servers name the new branch so)."""
    branch = arguments.get("branch")
    if name != "create_branch" or branch is None:
        return None
    from gitvow.api_change import branch_argument  # not on the hook's path for other tools

    return branch_argument(branch)
