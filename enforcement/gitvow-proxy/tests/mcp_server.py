"""A loopback stand-in for GitHub's hosted MCP server, built with the ``mcp`` SDK.

It exposes tools under the names github/github-mcp-server gives them and records every
call it receives, one JSON line each (tool, arguments, the Authorization and ``X-MCP-*``
headers it saw, the session id), so a test can tell what the proxy let through and how
often. Run as a process::

    python mcp_server.py PORT CERT KEY RECORD [--json | --sse]

Serves ``https://127.0.0.1:PORT/mcp/`` (Streamable HTTP, stateful: sessions have ids), or
with ``--sse`` the older HTTP+SSE transport: the event stream at ``/sse``, whose ``endpoint``
event names the message URL ``/messages/?session_id=…``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

#: (name, input-schema properties): tool names of github/github-mcp-server, and one it may
#: add some day that no table knows yet.
TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("get_me", {}),
    ("get_issue", {"owner": {"type": "string"}, "repo": {"type": "string"}, "issue_number": {"type": "integer"}}),
    ("list_issues", {"owner": {"type": "string"}, "repo": {"type": "string"}}),
    ("search_code", {"query": {"type": "string"}}),
    ("add_issue_comment", {"owner": {"type": "string"}, "repo": {"type": "string"},
                           "issue_number": {"type": "integer"}, "body": {"type": "string"}}),
    ("issue_write", {"method": {"type": "string", "enum": ["create", "update"]}, "owner": {"type": "string"},
                     "repo": {"type": "string"}, "title": {"type": "string"}}),
    ("create_pull_request", {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"},
                             "head": {"type": "string"}, "base": {"type": "string"}}),
    ("merge_pull_request", {"owner": {"type": "string"}, "repo": {"type": "string"},
                            "pullNumber": {"type": "integer"}}),
    ("create_branch", {"owner": {"type": "string"}, "repo": {"type": "string"}, "branch": {"type": "string"}}),
    ("push_files", {"owner": {"type": "string"}, "repo": {"type": "string"}, "branch": {"type": "string"}}),
    ("create_or_update_file", {"owner": {"type": "string"}, "repo": {"type": "string"}, "path": {"type": "string"},
                               "content": {"type": "string"}, "message": {"type": "string"},
                               "branch": {"type": "string"}}),
    ("delete_branch", {"owner": {"type": "string"}, "repo": {"type": "string"}, "branch": {"type": "string"}}),
    ("update_pull_request", {"owner": {"type": "string"}, "repo": {"type": "string"},
                             "pullNumber": {"type": "integer"}, "base": {"type": "string"}}),
    ("fork_repository", {"owner": {"type": "string"}, "repo": {"type": "string"}}),
    ("create_repository", {"name": {"type": "string"}}),
    ("manage_org_secrets", {"org": {"type": "string"}}),
]


#: ``get_issue`` of this issue answers only after the client saw its progress notification.
STREAMED = 999


async def streamed(ctx: Any, release: Path) -> types.CallToolResult:
    """Send a progress notification on the call's own event stream, then wait for the client to
    say it arrived (by creating ``release``): a proxy that held the stream back until the answer
    was complete would wait forever, and the call would time out."""
    meta = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    if token is not None:
        await ctx.session.send_progress_notification(token, 0.5, 1.0, "halfway", related_request_id=ctx.request_id)
    for _ in range(600):
        if release.exists():
            return types.CallToolResult(content=[types.TextContent(type="text", text="released")])
        await anyio.sleep(0.1)
    return types.CallToolResult(content=[types.TextContent(type="text", text="never released")], is_error=True)


def build(record: Path) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=f"GitHub: {name}", input_schema={"type": "object", "properties": props})
            for name, props in TOOLS
        ])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        headers = dict(request.headers) if request is not None and hasattr(request, "headers") else {}
        line = {
            "tool": params.name,
            "arguments": params.arguments or {},
            "authorization": headers.get("authorization", ""),
            "x-mcp": {k: v for k, v in headers.items() if k.startswith("x-mcp-")},
            "session": headers.get("mcp-session-id", "") or (
                request.query_params.get("session_id", "") if hasattr(request, "query_params") else ""),
        }
        with record.open("a") as out:
            out.write(json.dumps(line) + "\n")
        if params.name == "get_issue" and (params.arguments or {}).get("issue_number") == STREAMED:
            return await streamed(ctx, record.with_name("release"))
        text = f"done: {params.name}"
        if params.name == "merge_pull_request":
            text = "Pull Request successfully merged"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("github-stand-in", on_list_tools=list_tools, on_call_tool=call_tool)


def legacy_app(server: Server[Any]) -> Any:
    """The HTTP+SSE transport of MCP 2024-11-05: a GET event stream and a POST message endpoint."""
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/", TransportSecuritySettings(enable_dns_rebinding_protection=False))

    async def stream(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    return Starlette(routes=[Route("/sse", endpoint=stream, methods=["GET"]),
                             Mount("/messages/", app=sse.handle_post_message)])


def main(argv: list[str]) -> None:
    port, cert, key, record = int(argv[0]), argv[1], argv[2], Path(argv[3])
    server = build(record)
    if "--sse" in argv:
        uvicorn.run(legacy_app(server), host="127.0.0.1", port=port, ssl_certfile=cert, ssl_keyfile=key,
                    log_level="warning")
        return
    app = server.streamable_http_app(
        streamable_http_path="/mcp/",
        json_response="--json" in argv,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    uvicorn.run(app, host="127.0.0.1", port=port, ssl_certfile=cert, ssl_keyfile=key, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
