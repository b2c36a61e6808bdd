"""``tools/list`` answers without the tools the agent can never use (``[mcp.NAME] filter_tools``).

A tool stays when some call of it would be allowed for the agent, at the highest mode it
holds on any repository, or staged for a human (the ``approval`` relay): the model is not
offered what would only be refused. The answer is rewritten as it came, JSON or an event
stream; what cannot be read is left alone, since every call is judged anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gitvow import jsonrpc
from gitvow.adapters.mcp import TOOLS_LIST, McpAdapter, usable_tools
from gitvow.evaluator import Grant, evaluate_operation
from gitvow.pipeline import Engine


def list_ids(body: bytes) -> set[jsonrpc.JsonId]:
    """The ids of the ``tools/list`` requests in a request body."""
    try:
        messages, _ = jsonrpc.read_body(body)
    except jsonrpc.Unreadable:
        return set()
    return {m.id for m in messages if m.is_request and m.method == TOOLS_LIST}


def usable(engine: Engine, grant: Grant) -> Callable[[tuple[str, ...]], bool]:
    """Whether operations may go ahead for ``grant`` somewhere: allowed, or staged for a human."""
    highest = max([grant.mode, *grant.autonomy.values()])
    widest = replace(grant, mode=highest, autonomy={})

    def check(operations: tuple[str, ...]) -> bool:
        for operation in operations:
            verdict = evaluate_operation(operation, widest, table=engine.policy.table)
            if not verdict.allowed and not engine.is_staged(verdict):
                return False
        return True

    return check


def filtered(body: bytes, content_type: str, ids: set[jsonrpc.JsonId], adapter: McpAdapter,
             check: Callable[[tuple[str, ...]], bool]) -> bytes | None:
    """``body`` with the listed tools filtered, or None when nothing in it was changed."""
    changed = False

    def rewrite(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        if not isinstance(value, dict) or value.get("id") not in ids or "method" in value:
            return value
        result = value.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(tools, list):
            return value
        kept = usable_tools(adapter, tools, check)
        changed = changed or len(kept) != len(tools)
        return {**value, "result": {**result, "tools": kept}}

    found = jsonrpc.rewritten(body, content_type, rewrite)
    return found if changed else None
