"""The MCP reader never lets a merge through, however the JSON-RPC body is shaped.

Hypothesis builds bodies around a ``merge_pull_request`` call to GitHub's hosted MCP server:
alone or in a batch among reads and notifications, its keys in any order, its strings
``\\u``-escaped, with keys given twice, with the id, params and jsonrpc fields varied, or as
arbitrary bytes. Invariants, with the engine, policy and GitHub tool table as installed:

- reading never raises, and what comes out is operations of the vocabulary;
- at ``issues_only``, a body in which any JSON parser could see a ``tools/call`` of
  ``merge_pull_request`` (the first or the last of equal keys winning) is never forwarded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")

from gitvow.gates import Caller
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Request
from gitvow.vocabulary import OPERATIONS

URL = "https://api.githubcopilot.com/mcp/"
READS = ["get_issue", "list_issues", "search_code", "get_me"]


@pytest.fixture(scope="module")
def engine() -> Engine:
    plugins = installed()
    policy = parse_policy({"agents": {"bot": {"mode": "issues_only"}}}, relays=plugins.relays, sections=(),
                          absent="skip")
    return Engine(policy, plugins)


def _call(name: str, ident: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": name, "arguments": {"owner": "team", "repo": "app", "pullNumber": 7}}}


ids = st.one_of(st.integers(-5, 10**6), st.text(max_size=8), st.none())
others = st.one_of(
    st.builds(_call, st.sampled_from(READS), ids),
    st.just({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    st.builds(lambda i: {"jsonrpc": "2.0", "id": i, "method": "tools/list"}, ids),
)


def _escaped(text: str) -> str:
    """Every character of a JSON document's strings as a \\u escape: the same value to a parser."""
    return "".join(f"\\u{ord(c):04x}" if c.isalnum() or c == "_" else c for c in text)


@st.composite
def merge_bodies(draw: st.DrawFn) -> bytes:
    merge = _call("merge_pull_request", draw(ids))
    messages = draw(st.lists(others, max_size=4))
    messages.insert(draw(st.integers(0, len(messages))), merge)
    value: Any = messages if draw(st.booleans()) or len(messages) > 1 else messages[0]
    text = json.dumps(value, sort_keys=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace('"merge_pull_request"', '"' + _escaped("merge_pull_request") + '"')
    if draw(st.booleans()):  # the same key twice: the merge first or last
        decoy = '"name": "get_issue", '
        text = text.replace('"name": ', decoy + '"name": ', 1) if draw(st.booleans()) else text.replace(
            '"name": "merge_pull_request"', '"name": "merge_pull_request", "name": "get_issue"', 1)
    return text.encode()


def _decide(engine: Engine, body: bytes) -> Any:
    request = Request.from_url("POST", URL, body=body, headers={"content-type": "application/json"})
    grant = engine.policy.grant_for("bot")
    assert grant is not None
    return engine.decide(request, Caller("bot", grant))


@given(body=merge_bodies())
def test_a_merge_in_any_shape_is_never_forwarded(engine: Engine, body: bytes) -> None:
    decision = _decide(engine, body)
    assert decision.action is not Action.FORWARD, body


@given(body=st.one_of(st.binary(max_size=300), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "name", "arguments", "result", "error", "x"]),
        inner, max_size=5)), max_leaves=20).map(lambda v: json.dumps(v).encode())))
def test_anything_is_read_without_raising_into_the_vocabulary(engine: Engine, body: bytes) -> None:
    decision = _decide(engine, body)
    assert decision.classification is not None
    assert set(decision.classification.operations) <= set(OPERATIONS)
