"""MCP endpoints on the wire: JSON-RPC over HTTP, judged tool call by tool call.

An ``[mcp.NAME]`` table declares an MCP server the agent reaches over HTTP: its ``url``
(scheme, host, port and path prefix) and ``tools``, the forge adapter whose tool table
classifies its ``tools/call`` requests. That table is the one the agent gate uses for the
same tool (``Adapter.classify_mcp_tool``), so ``merge_pull_request`` gets one verdict at both
enforcement points. GitHub's hosted server is built in (:data:`BUILTIN`), so it is served
ahead of the inference adapter that owns its host.

What a request is (:meth:`McpAdapter.classify`):

- a POST under the prefix is read as JSON-RPC 2.0, one message or a batch (Streamable HTTP,
  and the message endpoint of the older HTTP+SSE transport alike); a ``tools/call`` is what the
  tool table says, with the repository from its arguments; every other method MCP defines
  (``initialize``, ``tools/list``, notifications, ...) and a response the client returns to the
  server is ``read``; a method or tool the table does not know is ``unknown``;
- GET (the server's event stream), DELETE (ending a session), HEAD and OPTIONS are ``read``;
- anything else, or anything outside the prefix on a host only the endpoint serves, is
  ``unknown``.

A refusal is written as the client shows it to the model: a ``tools/call`` gets a tool result
with ``isError`` carrying the one-line denial, any other request a JSON-RPC error with it
(:meth:`McpAdapter.refusal_body`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitvow import jsonrpc
from gitvow.adapter import Adapter
from gitvow.change import Change, needs_change, with_operations
from gitvow.errors import PolicyError
from gitvow.request import Classification, Request, ToolCall
from gitvow.vocabulary import READ, UNKNOWN

if TYPE_CHECKING:
    from typing import Any

#: Endpoints served without any configuration, each only when its forge adapter is installed;
#: an ``[mcp.NAME]`` of the same name replaces one.
BUILTIN: Mapping[str, tuple[str, str]] = {"github": ("https://api.githubcopilot.com/mcp/", "github")}

#: Client-to-server methods of the MCP specification (2024-11-05 to 2026-07-28) other than
#: ``tools/call``: they read, or act on nothing but the session and calls already judged.
READ_METHODS = frozenset({
    "initialize", "ping", "server/discover", "tools/list", "resources/list", "resources/templates/list",
    "resources/read", "resources/subscribe", "resources/unsubscribe", "subscriptions/listen", "prompts/list",
    "prompts/get", "completion/complete", "logging/setLevel", "tasks/get", "tasks/list", "tasks/result",
    "tasks/cancel",
    "notifications/initialized", "notifications/cancelled", "notifications/progress",
    "notifications/roots/list_changed",
})
#: The routing headers of 2026-07-28 that mirror a request's method and its tool's name: a
#: server or gateway may route by them, so they must say what the judged body says.
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"
#: The header a Streamable HTTP server names its session by.
SESSION_HEADER = "mcp-session-id"
_QUIET_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


#: ``scheme://host[:port][/path]`` in the characters that :func:`urllib.parse.urlsplit` passes
#: through unchanged: such a URL is split here, without importing urllib.parse (and ipaddress)
#: on the agent hook's forge path; any other goes to urlsplit. Both give the same answer
#: (``core/tests/test_mcp_endpoint_url.py``).
_PLAIN_URL = re.compile(r"(https?)://([a-z0-9]+(?:[.-][a-z0-9]+)*)(?::([0-9]{1,5}))?(/[A-Za-z0-9._~/-]*)?")


def _split_plain(url: str) -> tuple[str, str, int | None, str] | None:
    """(scheme, host, port, path) of a plain URL, or None for urlsplit to read."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    scheme, host, port, path = match.groups()
    if port is not None and int(port) > 65535:
        return None
    return scheme, host, None if port is None else int(port), path or ""


def _split(url: str) -> tuple[str, str, int | None, str] | None:
    """(scheme, host, port, path) by urlsplit; None for a URL an endpoint cannot be."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return None
    return parts.scheme, parts.hostname.lower(), port, parts.path


@dataclass(frozen=True, slots=True)
class McpEndpoint:
    """One ``[mcp.NAME]``: where the server is, whose tool table applies, and whether
    ``tools/list`` answers are filtered to what the agent may use."""

    name: str
    scheme: str
    host: str
    port: int
    prefix: str
    tools: str
    filter_tools: bool = False

    @classmethod
    def parse(cls, name: str, url: str, tools: str, *, filter_tools: bool = False,
              source: str | None = None) -> McpEndpoint:
        split = _split_plain(url) or _split(url)
        if split is None:
            raise PolicyError(f"expected an http(s) URL with a host and a path prefix, no query; got {url!r}",
                              source=source, key=f"mcp.{name}.url")
        scheme, host, port, path = split
        return cls(name, scheme, host, port or (443 if scheme == "https" else 80), "/" + path.strip("/"), tools,
                   filter_tools)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}"

    def serves(self, request: Request) -> bool:
        """Whether ``request`` goes to this server: same scheme, host and port, path under the prefix."""
        if request.host != self.host or request.port != self.port or request.scheme != self.scheme:
            return False
        return self.under(request.path)

    def under(self, path: str) -> bool:
        return self.prefix == "/" or path == self.prefix or path.startswith(self.prefix + "/")


class McpAdapter(Adapter):
    """One MCP endpoint, classifying with its forge adapter's tool table."""

    def __init__(self, endpoint: McpEndpoint, forge: Adapter) -> None:
        self.endpoint = endpoint
        self.forge = forge
        self.name = f"mcp.{endpoint.name}"  # type: ignore[misc]  # per instance, unlike plugin adapters

    @property
    def credential_name(self) -> str:
        """The ``[credentials.NAME]`` whose token this server takes: its forge's."""
        return self.forge.name

    def classify(self, request: Request) -> Classification:
        if not self.endpoint.under(request.path):
            return Classification.unknown(f"not under the MCP endpoint {self.endpoint.prefix}")
        if request.method in _QUIET_METHODS:
            return Classification((READ,), adapter=self.name)
        if request.method != "POST":
            return Classification.unknown(f"MCP takes no {request.method}")
        if request.header("content-encoding").strip().lower() not in ("", "identity"):
            return Classification.unknown("the JSON-RPC body is compressed and cannot be read")
        try:
            messages, batch = jsonrpc.read_body(request.body)
        except jsonrpc.Unreadable as exc:
            return Classification.unknown(str(exc))
        mismatch = _routing_mismatch(request, messages, batch)
        if mismatch:
            return Classification.unknown(mismatch)
        return self.classify_messages(messages)

    def classify_messages(self, messages: Sequence[jsonrpc.Message]) -> Classification:
        """The operations of every message; a batch is allowed only if each of its calls is."""
        actions: list[str] = []
        repos: list[str] = []
        notes: list[str] = []
        changes: list[Change] = []
        missing = False
        for message in messages:
            operations, repo, note, change = self._message(message)
            actions.extend(operations)
            if repo is not None and repo not in repos:
                repos.append(repo)
            if note:
                notes.append(note)
            if change is not None:
                changes.append(change)
            elif needs_change(operations) is not None:
                missing = True
        operations = tuple(dict.fromkeys(actions))
        return Classification(
            operations, adapter=self.name, repos=tuple(repos), note="; ".join(notes)[:200],
            actions=tuple(actions) if len(actions) != len(operations) else (),
            change=None if missing else _together(changes),
        )

    def _message(self, message: jsonrpc.Message) -> tuple[tuple[str, ...], str | None, str, Change | None]:
        """A message's operations, repository, note and change: the tool's change is the one
        the forge's tool table read from the arguments (the change of the REST or GraphQL write
        the tool stands for), judged here exactly as at the gate."""
        if message.method is None or message.method in READ_METHODS:
            return (READ,), None, "", None
        if message.method != TOOLS_CALL:
            return (UNKNOWN,), None, f"an MCP method gitvow does not know ({message.method[:60]})", None
        name, arguments = message.params.get("name"), message.params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return (UNKNOWN,), None, "a tools/call without a tool name and an arguments object", None
        call = self.tool(name, arguments)
        if call is None or not call.operations or UNKNOWN in call.operations:
            return (UNKNOWN,), None, f"a tool call the {self.forge.name} tool table does not know ({name[:60]})", None
        change = call.change
        operations = call.operations if change is None else with_operations(call.operations, change)
        return operations, call.repo, "", change

    def tool(self, name: str, arguments: Mapping[str, object]) -> ToolCall | None:
        """The forge's answer for one tool, named as the gate sees it (``mcp__FORGE__TOOL``)."""
        return self.forge.classify_mcp_tool(f"mcp__{self.forge.name}__{name}", arguments)

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        return {"authorization": f"Bearer {token}"}

    def relay_hints(self, operation: str) -> Sequence[str]:
        """The forge's: the same tools are not to be used for a relayed operation, as at the gate."""
        return self.forge.relay_hints(operation)

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        return "application/json", refusal(request.body, message, code)

    def unsupported(self) -> Mapping[str, str]:
        return {}


def _together(changes: Sequence[Change]) -> Change | None:
    """The changes of a request's tool calls as one (a batch is allowed only if all of it is)."""
    if len(changes) <= 1:
        return changes[0] if changes else None
    from gitvow.api_change import merge_changes

    return merge_changes(changes)


def _routing_mismatch(request: Request, messages: Sequence[jsonrpc.Message], batch: bool) -> str:
    """Why the ``Mcp-Method``/``Mcp-Name`` headers disagree with the body ('' when they do not)."""
    method, name = request.header(METHOD_HEADER), request.header(NAME_HEADER)
    if not method and not name:
        return ""
    if batch or messages[0].method is None:
        return "Mcp-Method or Mcp-Name headers on a body that is not one request"
    message = messages[0]
    if method and method != message.method:
        return "the Mcp-Method header names another method than the body"
    if name and message.method == TOOLS_CALL and name != message.params.get("name"):
        return "the Mcp-Name header names another tool than the body"
    return ""


def refusal(body: bytes, message: str, code: str, *, tool_results: bool = True) -> bytes:
    """The denial as the client reads it: per request, a tool result with ``isError`` for a
    ``tools/call`` (unless ``tool_results`` is False) and a JSON-RPC error for anything else
    (a batch answered as a batch); an error with a null id when no request can be read."""
    try:
        messages, batch = jsonrpc.read_body(body)
    except jsonrpc.Unreadable:
        messages, batch = (), False
    answers = [_refused(m, message, code, tool_results) for m in messages if m.is_request]
    if not answers:
        return jsonrpc.dumps(jsonrpc.error(None, message, data={"reason": code}))
    return jsonrpc.dumps(answers if batch else answers[0])


def _refused(message: jsonrpc.Message, line: str, code: str, tool_results: bool) -> dict[str, Any]:
    if message.method == TOOLS_CALL and tool_results:
        return jsonrpc.result(message.id, {"content": [{"type": "text", "text": line}], "isError": True})
    return jsonrpc.error(message.id, line, data={"reason": code})


def endpoints(declared: Mapping[str, Mapping[str, Any]], adapters: Mapping[str, Adapter], *,
              source: str | None = None) -> dict[str, McpAdapter]:
    """The MCP adapters of ``[mcp]`` and :data:`BUILTIN`, by name (``mcp.NAME``).

    A declared endpoint whose ``tools`` names no installed adapter, or one that has no tool
    table, is a load error naming ``mcp.NAME.tools``; a built-in one is skipped then.
    """
    result: dict[str, McpAdapter] = {}
    rules = {name: {"url": url, "tools": tools} for name, (url, tools) in BUILTIN.items()
             if name not in declared and tools in adapters}
    rules.update({name: dict(rule) for name, rule in declared.items()})
    for name, rule in rules.items():
        tools = str(rule["tools"])
        forge = adapters.get(tools)
        if forge is None or type(forge).classify_mcp_tool is Adapter.classify_mcp_tool:
            known = ", ".join(sorted(n for n, a in adapters.items()
                                     if type(a).classify_mcp_tool is not Adapter.classify_mcp_tool)) or "none"
            raise PolicyError(f"no installed adapter {tools!r} has an MCP tool table (installed: {known})",
                              source=source, key=f"mcp.{name}.tools")
        endpoint = McpEndpoint.parse(name, str(rule["url"]), tools, filter_tools=bool(rule.get("filter_tools")),
                                     source=source)
        adapter = McpAdapter(endpoint, forge)
        result[adapter.name] = adapter
    return result


def credential_name(adapter: Adapter) -> str:
    """The ``[credentials.NAME]`` an adapter's requests carry: an MCP endpoint takes its forge's."""
    return adapter.credential_name if isinstance(adapter, McpAdapter) else adapter.name


def tool_schemas_methods(tool: Mapping[str, Any]) -> list[dict[str, object]]:
    """Argument sets to try a listed tool with: ``{}``, or one per value of a ``method`` enum
    in its input schema (a consolidated tool such as ``issue_write`` picks its operation so)."""
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    method = props.get("method") if isinstance(props, dict) else None
    values = method.get("enum") if isinstance(method, dict) else None
    if isinstance(values, list) and values:
        return [{"method": value} for value in values if isinstance(value, str)]
    return [{}]


def usable_tools(adapter: McpAdapter, tools: Sequence[Any], usable: Callable[[tuple[str, ...]], bool]) -> list[Any]:
    """``tools`` (a ``tools/list`` result's list) without those the agent can never use.

    A tool stays when, for some argument set (:func:`tool_schemas_methods`), the table
    knows it and ``usable`` says its operations may go ahead (allowed, or staged for a human).
    A tool the table does not know is dropped: calling it would be refused as ``unknown``.
    """
    kept = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str):
            continue
        for arguments in tool_schemas_methods(tool):
            call = adapter.tool(name, arguments)
            if call is not None and call.operations and UNKNOWN not in call.operations and usable(call.operations):
                kept.append(tool)
                break
    return kept
