"""The proxy's MCP parts on their own: session bindings, the event-wise stream, list filtering."""

from __future__ import annotations

import json

from gitvow import jsonrpc
from gitvow.adapters.mcp import McpAdapter
from gitvow.evaluator import Grant
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow_proxy.mcp.sessions import SessionBindings, session_of, sessions_of
from gitvow_proxy.mcp.stream import REDACTED, EventStream
from gitvow_proxy.mcp.tools import filtered, list_ids, usable


def test_a_session_is_the_agents_that_opened_it_and_nobody_elses() -> None:
    bindings = SessionBindings(limit=2)
    assert bindings.bind("mcp.github", "s1", "alice") and bindings.bind("mcp.github", "s1", "alice")
    assert not bindings.bind("mcp.github", "s1", "bob")
    assert bindings.refusal("mcp.github", "s1", "alice") is None
    assert "another agent" in (bindings.refusal("mcp.github", "s1", "bob") or "")
    assert "not opened through gitvow" in (bindings.refusal("mcp.github", "never", "alice") or "")
    assert "not opened" in (bindings.refusal("mcp.other", "s1", "alice") or "")  # per endpoint
    bindings.bind("e", "s2", "a")
    bindings.bind("e", "s3", "a")  # over the limit: the oldest is forgotten, and refused from then on
    assert bindings.holder("mcp.github", "s1") is None
    bindings.forget("e", "s3")
    assert bindings.holder("e", "s3") is None


def test_the_session_is_read_from_the_header_or_the_older_transports_query() -> None:
    assert session_of(" abc ", "session_id=x") == "abc"
    assert session_of("", "session_id=x&y=1") == "x" and session_of("", "sessionId=z") == "z"
    assert session_of("", "") == "" and session_of("", "other=1") == ""
    # every id a server might read is checked: a header of one's own cannot carry another's query
    assert sessions_of(["mine"], "session_id=theirs&sessionId=x&session_id=") == ["mine", "theirs", "", "x"]
    assert sessions_of([" ", "a"], "") == ["a"]


def test_events_pass_whole_and_scrubbed_as_they_complete() -> None:
    sessions: list[str] = []
    stream = EventStream([b"tok-SECRET"], on_session=sessions.append)
    assert stream(b"event: message\ndata: {\"a\":\"tok-SEC") == b""  # not a whole event yet
    out = stream(b"RET\"}\n\nevent: endpoint\ndata: /messages/?session_id=abc\n\ndata: par")
    assert out == b"event: message\ndata: {\"a\":\"" + REDACTED + b"\"}\n\nevent: endpoint\ndata: /messages/?session_id=abc\n\n"
    assert sessions == ["abc"] and stream.redacted
    assert stream(b"tial") == b"" and stream(b"") == b"data: partial"


def test_an_endless_event_is_passed_on_in_bounded_pieces_without_splitting_a_needle() -> None:
    from gitvow_proxy.mcp import stream as module

    stream = EventStream([b"SECRET"])
    big = b"data: " + b"x" * module.MAX_EVENT + b"SEC"
    first = stream(big)
    assert first and len(first) < len(big)
    assert REDACTED in first + stream(b"RET") + stream(b"")


def _engine(mode: str, filter_tools: bool = True) -> tuple[Engine, McpAdapter]:
    plugins = installed()
    policy = parse_policy({"agents": {"bot": {"mode": mode}},
                           "mcp": {"github": {"url": "https://mcp.test/mcp/", "tools": "github",
                                              "filter_tools": filter_tools}}},
                          relays=plugins.relays, sections=(), absent="skip")
    engine = Engine(policy, plugins)
    adapter = engine.adapters["mcp.github"]
    assert isinstance(adapter, McpAdapter)
    return engine, adapter


TOOLS = [{"name": n} for n in ("get_issue", "add_issue_comment", "merge_pull_request", "create_branch",
                               "delete_repository", "brand_new_tool")]


def test_a_tools_list_answer_keeps_what_the_mode_can_use_json_or_stream() -> None:
    engine, adapter = _engine("issues_only")
    grant = engine.policy.grant_for("bot")
    assert grant is not None
    ids = list_ids(json.dumps([{"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
                               {"jsonrpc": "2.0", "id": 5, "method": "ping"}]).encode())
    assert ids == {4}
    answer = jsonrpc.dumps(jsonrpc.result(4, {"tools": TOOLS}))
    kept = filtered(answer, "application/json", ids, adapter, usable(engine, grant))
    assert kept is not None
    assert [t["name"] for t in json.loads(kept)["result"]["tools"]] == ["get_issue", "add_issue_comment",
                                                                          "merge_pull_request"]
    stream = b"event: message\ndata: " + answer + b"\n\n"
    kept_stream = filtered(stream, "text/event-stream", ids, adapter, usable(engine, grant))
    assert kept_stream is not None and b"create_branch" not in kept_stream and b"get_issue" in kept_stream
    assert filtered(answer, "application/json", {9}, adapter, usable(engine, grant)) is None  # not a list answer
    assert filtered(b"{oops", "application/json", ids, adapter, usable(engine, grant)) is None


def test_autonomy_on_any_repository_counts_as_usable() -> None:
    engine, adapter = _engine("advisory")
    grant = Grant(Mode.ADVISORY, autonomy={"team/app": Mode.ISSUES_AND_PRS})
    answer = jsonrpc.dumps(jsonrpc.result(1, {"tools": TOOLS}))
    kept = filtered(answer, "application/json", {1}, adapter, usable(engine, grant))
    assert kept is not None and b"create_branch" in kept and b"delete_repository" not in kept
