"""MCP on the wire: the JSON-RPC reader, [mcp.NAME] endpoints, routing and refusals."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from gitvow import jsonrpc
from gitvow.adapter import Adapter
from gitvow.adapters.inference import InferenceAdapter
from gitvow.adapters.mcp import McpAdapter, McpEndpoint, credential_name, endpoints, usable_tools
from gitvow.errors import PolicyError
from gitvow.gates import Caller, Context, Gates
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import parse_policy
from gitvow.relay import APPROVAL
from gitvow.request import Classification, Request, ToolCall

URL = "https://mcp.forge.test/mcp/"


class Forge(Adapter):
    """A forge with a small tool table, shaped like the real ones (bare names: None)."""

    name = "forge"
    default_hosts = ("forge.test",)

    def classify(self, request: Request) -> Classification:
        return Classification(("read",))

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        if not tool.startswith("mcp__forge__"):
            return None
        name = tool.removeprefix("mcp__forge__")
        ops = {"add_issue_comment": "issue.comment", "merge_pull_request": "pr.merge", "get_issue": "read",
               "delete_repository": "repo.delete"}.get(name)
        if name == "issue_write":
            ops = {"create": "issue.create", "update": "issue.edit"}.get(str(arguments.get("method")), "unknown")
        owner, repo = arguments.get("owner"), arguments.get("repo")
        return ToolCall((ops or "unknown",), repo=f"{owner}/{repo}" if owner and repo else None, adapter="forge")


    def relay_hints(self, operation: str) -> tuple[str, ...]:
        return ("forge-cli pr merge",) if operation == "pr.merge" else ()


class NoTools(Adapter):
    name = "notools"

    def classify(self, request: Request) -> Classification:
        return Classification(("read",))


def _adapter(url: str = URL) -> McpAdapter:
    return McpAdapter(McpEndpoint.parse("forge", url, "forge"), Forge())


def _post(body: object, url: str = URL, **headers: str) -> Request:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Request.from_url("POST", url, body=raw, headers={"content-type": "application/json", **headers})


def _call(tool: str, ident: int | str = 1, **arguments: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


# -- the reader ------------------------------------------------------------------------------


def test_a_tool_call_is_classified_with_the_forge_table_and_its_repository() -> None:
    c = _adapter().classify(_post(_call("add_issue_comment", owner="o", repo="r", issue_number=1, body="hi")))
    assert c.operations == ("issue.comment",) and c.repo == "o/r" and c.adapter == "mcp.forge"


@pytest.mark.parametrize("method", ["initialize", "tools/list", "ping", "notifications/initialized", "resources/read"])
def test_the_rest_of_the_protocol_is_read(method: str) -> None:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": {}}
    if not method.startswith("notifications/"):
        message["id"] = 7
    assert _adapter().classify(_post(message)).operations == ("read",)


def test_a_response_the_client_returns_to_the_server_is_read() -> None:
    assert _adapter().classify(_post({"jsonrpc": "2.0", "id": 3, "result": {}})).operations == ("read",)


@pytest.mark.parametrize("method", ["GET", "DELETE", "HEAD", "OPTIONS"])
def test_the_stream_and_the_session_end_are_read(method: str) -> None:
    assert _adapter().classify(Request.from_url(method, URL)).operations == ("read",)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (_call("no_such_tool"), "does not know"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/delete", "params": {}}, "does not know"),
        ({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}}, "does not know"),
        (b"{not json", "not JSON"),
        ([], "empty batch"),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "not JSON-RPC 2.0"),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, "id"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "id"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": []}, "params"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}, "tool name"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_issue", "arguments": []}},
         "tool name"),
        ({"jsonrpc": "2.0", "id": 1}, "neither"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}}, "neither"),
        (_call("issue_write", method="lock"), ""),
        ([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(jsonrpc.MAX_BATCH + 1)], "batch of more"),
        (b" " * (jsonrpc.MAX_BODY + 1), "larger"),
        # parsers differ on which of two equal keys wins: never judged
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","name":"merge_pull_request"}}',
         "twice"),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_issue_comment",'
         b'"arguments":{"owner":"team","repo":"app","owner":"victim"}}}', "twice in one object (owner)"),
    ],
)
def test_what_cannot_be_read_or_matched_is_unknown(body: object, why: str) -> None:
    c = _adapter().classify(_post(body))
    assert "unknown" in c.operations and why in c.note


def test_unknown_http_methods_compressed_bodies_and_paths_outside_the_prefix_are_unknown() -> None:
    adapter = _adapter()
    assert adapter.classify(Request.from_url("PUT", URL)).is_unknown
    assert adapter.classify(_post(_call("get_issue"), **{"content-encoding": "gzip"})).is_unknown
    assert adapter.classify(_post(_call("get_issue"), url="https://mcp.forge.test/mcpx")).is_unknown
    assert adapter.classify(_post(_call("get_issue"), url="https://mcp.forge.test/other")).is_unknown


def test_routing_headers_must_say_what_the_body_says() -> None:
    adapter, body = _adapter(), _call("get_issue", owner="o", repo="r")
    assert adapter.classify(_post(body, **{"mcp-method": "tools/call", "mcp-name": "get_issue"})).operations == ("read",)
    assert "Mcp-Name" in adapter.classify(_post(body, **{"mcp-name": "merge_pull_request"})).note
    assert "Mcp-Method" in adapter.classify(_post(body, **{"mcp-method": "tools/list"})).note
    assert adapter.classify(_post([body], **{"mcp-method": "tools/call"})).is_unknown


def test_a_batch_carries_every_operation_and_repository() -> None:
    batch = [_call("add_issue_comment", 1, owner="o", repo="a"), _call("merge_pull_request", 2, owner="o", repo="b"),
             _call("add_issue_comment", 3, owner="o", repo="a"), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    c = _adapter().classify(_post(batch))
    assert c.operations == ("issue.comment", "pr.merge", "read")
    assert c.repos == ("o/a", "o/b") and c.actions.count("issue.comment") == 2


def test_the_older_transports_message_endpoint_is_read_the_same() -> None:
    adapter = _adapter("http://127.0.0.1:8931/")
    c = adapter.classify(_post(_call("merge_pull_request", owner="o", repo="r"),
                               url="http://127.0.0.1:8931/messages/?session_id=abc"))
    assert c.operations == ("pr.merge",)


# -- endpoints and routing -------------------------------------------------------------------


def test_endpoint_urls_are_checked_and_name_their_key() -> None:
    for bad in ("ftp://h/mcp", "https:///mcp", "https://h/mcp?x=1", "https://h:99999/mcp"):
        with pytest.raises(PolicyError, match=r"mcp\.x\.url"):
            McpEndpoint.parse("x", bad, "forge")
    e = McpEndpoint.parse("x", "http://Host.Test:8080/a/b/", "forge")
    assert (e.host, e.port, e.prefix) == ("host.test", 8080, "/a/b")
    assert e.under("/a/b") and e.under("/a/b/") and e.under("/a/b/c") and not e.under("/a/bc")


def test_tools_must_name_an_adapter_with_a_tool_table() -> None:
    with pytest.raises(PolicyError, match=r"mcp\.x\.tools.*installed: forge"):
        endpoints({"x": {"url": URL, "tools": "notools"}}, {"forge": Forge(), "notools": NoTools()})
    with pytest.raises(PolicyError, match=r"mcp\.x\.tools"):
        endpoints({"x": {"url": URL, "tools": "absent"}}, {"forge": Forge()})


def test_the_github_endpoint_is_built_in_only_with_the_github_adapter() -> None:
    assert endpoints({}, {"forge": Forge()}) == {}

    class GitHub(Forge):
        name = "github"

    found = endpoints({}, {"github": GitHub()})
    assert list(found) == ["mcp.github"]
    assert found["mcp.github"].endpoint.url == "https://api.githubcopilot.com:443/mcp"
    assert credential_name(found["mcp.github"]) == "github" and credential_name(GitHub()) == "github"
    replaced = endpoints({"github": {"url": "http://127.0.0.1:9/mcp", "tools": "github"}}, {"github": GitHub()})
    assert replaced["mcp.github"].endpoint.host == "127.0.0.1"


def _engine(policy: dict[str, object] | None = None) -> Engine:
    plugins = Plugins.of(adapters=[Forge(), InferenceAdapter()], relays=[APPROVAL])
    data = {"agents": {"bot": {"mode": "issues_only"}}, **(policy or {})}
    return Engine(parse_policy(data, relays=plugins.relays, sections=()), plugins)


def test_an_endpoint_is_served_ahead_of_the_hosts_adapter_by_path() -> None:
    engine = _engine({"mcp": {"copilot": {"url": "https://api.githubcopilot.com/mcp/", "tools": "forge"}}})
    mcp = engine.hosts.route(_post(_call("get_issue"), url="https://api.githubcopilot.com/mcp/"))
    assert mcp is engine.adapters["mcp.copilot"]
    model = engine.hosts.route(Request.from_url("POST", "https://api.githubcopilot.com/chat/completions"))
    assert model is not None and model.name == "inference"
    assert engine.hosts.lookup("api.githubcopilot.com", 443) is model  # the host keeps its own adapter
    assert ("https://api.githubcopilot.com:443/mcp", "mcp.copilot") in engine.hosts.items()


def test_a_host_only_an_endpoint_serves_is_intercepted_and_outside_its_prefix_unknown() -> None:
    engine = _engine({"mcp": {"local": {"url": "http://127.0.0.1:8931/mcp", "tools": "forge"}}})
    assert engine.hosts.intercepts("127.0.0.1", 8931) and not engine.hosts.intercepts("127.0.0.1", 8932)
    decision = engine.decide(Request.from_url("GET", "http://127.0.0.1:8931/admin"), _caller(engine))
    assert decision.action is Action.DENY and decision.adapter == "mcp.local"


def _caller(engine: Engine, agent: str = "bot") -> Caller:
    grant = engine.policy.grant_for(agent)
    assert grant is not None
    return Caller(agent, grant)


class Token(Gates):
    def credential(self, ctx: Context) -> str | None:
        return {"forge": "tok"}.get(credential_name(ctx.adapter))


def test_the_pipeline_judges_each_call_and_injects_the_forges_token_as_bearer() -> None:
    engine = _engine({"mcp": {"local": {"url": "http://127.0.0.1:8931/mcp", "tools": "forge"}}})
    url = "http://127.0.0.1:8931/mcp"
    ok = engine.decide(_post(_call("add_issue_comment", owner="o", repo="r"), url=url), _caller(engine), Token())
    assert ok.action is Action.FORWARD and ok.headers == {"authorization": "Bearer tok"}
    staged = engine.decide(_post(_call("merge_pull_request", owner="o", repo="r"), url=url), _caller(engine), Token())
    assert staged.action is Action.DENY and staged.staged and staged.reason == "hard_deny"
    assert engine.adapters["mcp.local"].relay_hints("pr.merge") == ("forge-cli pr merge",)  # the forge's, as at the gate
    refused = engine.decide(_post(_call("delete_repository", owner="o", repo="r"), url=url), _caller(engine), Token())
    assert refused.action is Action.DENY and not refused.staged
    batch = [_call("add_issue_comment", 1, owner="o", repo="r"), _call("delete_repository", 2, owner="o", repo="r")]
    assert engine.decide(_post(batch, url=url), _caller(engine), Token()).action is Action.DENY


# -- refusals, retries, lists ------------------------------------------------------------------


def test_a_refused_tool_call_is_a_tool_result_with_is_error_and_other_requests_an_error() -> None:
    adapter = _adapter()
    kind, body = adapter.refusal_body(_post(_call("merge_pull_request", 9)), "no. reason=hard_deny", "hard_deny")
    assert kind == "application/json"
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 9, "result": {
        "content": [{"type": "text", "text": "no. reason=hard_deny"}], "isError": True}}
    batch = [_call("x", "a"), {"jsonrpc": "2.0", "id": "b", "method": "tools/delete"},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    answers = json.loads(adapter.refusal_body(_post(batch), "no", "mode_denied")[1])
    assert [a["id"] for a in answers] == ["a", "b"] and answers[0]["result"]["isError"]
    assert answers[1]["error"] == {"code": jsonrpc.REFUSED, "message": "no", "data": {"reason": "mode_denied"}}
    unread = json.loads(adapter.refusal_body(_post(b"{"), "no", "mode_denied")[1])
    assert unread["id"] is None and unread["error"]["message"] == "no"


def test_a_retry_has_the_same_canonical_body_and_gets_the_answer_under_its_own_id() -> None:
    first, retry = json.dumps(_call("merge_pull_request", 1, owner="o")), json.dumps(_call("merge_pull_request", 5, owner="o"))
    assert jsonrpc.canonical(first.encode()) == jsonrpc.canonical(retry.encode())
    assert jsonrpc.canonical(json.dumps(_call("merge_pull_request", 1, owner="p")).encode()) != jsonrpc.canonical(
        first.encode())
    assert jsonrpc.canonical(b"{x") == b"{x"
    assert jsonrpc.request_ids(retry.encode()) == (5,)
    answer = jsonrpc.dumps(jsonrpc.result(1, {"content": []}))
    assert json.loads(jsonrpc.readdressed(answer, "application/json", [5]))["id"] == 5
    stream = b"event: message\ndata: " + answer + b"\n\n"
    events = list(jsonrpc.iter_events(jsonrpc.readdressed(stream, "text/event-stream", ["r"])))
    assert events[0]["event"] == "message" and json.loads(events[0]["data"])["id"] == "r"
    server_request = b'data: {"jsonrpc":"2.0","id":1,"method":"roots/list"}\n\n'
    assert json.loads(next(jsonrpc.iter_events(jsonrpc.readdressed(server_request, "text/event-stream", [5])))["data"])[
        "id"] == 1


def test_a_filtered_tool_list_keeps_what_the_agent_may_use_or_have_approved() -> None:
    tools = [{"name": "get_issue"}, {"name": "add_issue_comment"}, {"name": "merge_pull_request"},
             {"name": "delete_repository"}, {"name": "unheard_of"}, {"nameless": 1},
             {"name": "issue_write", "inputSchema": {"properties": {"method": {"enum": ["create", "update"]}}}}]
    allowed = {"read", "issue.comment", "issue.edit"}
    kept = usable_tools(_adapter(), tools, lambda ops: set(ops) <= allowed or ops == ("pr.merge",))
    assert [t["name"] for t in kept] == ["get_issue", "add_issue_comment", "merge_pull_request", "issue_write"]
    assert [t["name"] for t in usable_tools(_adapter(), tools[-1:], lambda ops: False)] == []
