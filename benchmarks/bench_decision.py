"""In-process decision cost: classify + evaluate, the work gitvow adds to each request.

Run: ``pytest benchmarks/bench_decision.py --benchmark-only`` (figures in docs/benchmarks.md).
CI runs it with ``--benchmark-disable`` so it stays correct; timings are never asserted.
"""

from __future__ import annotations

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.request import Request

gitsmart = pytest.importorskip("gitvow_gitsmart.adapter")

CALLER = Caller("bench", Grant(Mode.ISSUES_AND_PRS))


@pytest.fixture(scope="module")
def engine() -> Engine:
    plugins = installed()
    return Engine(Policy(hosts={"git.example.test": "gitsmart"}, relays=plugins.relays), plugins)


REQUESTS = {
    "git-info-refs": Request.from_url("GET", "https://git.example.test/team/app.git/info/refs?service=git-upload-pack"),
    "git-push-3-refs": Request.from_url(
        "POST",
        "https://git.example.test/team/app.git/git-receive-pack",
        body=gitsmart.push_body(*[("a" * 40, "b" * 40, f"refs/heads/b{i}") for i in range(3)]),  # a real pack
    ),
    "inference-call": Request.from_url("POST", "https://api.githubcopilot.com/chat/completions", body=b"{}"),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_decide(benchmark, engine: Engine, name: str) -> None:  # type: ignore[no-untyped-def]
    request = REQUESTS[name]
    decision = benchmark(engine.decide, request, CALLER)
    assert decision.action is Action.FORWARD


MCP_CALL = Request.from_url(
    "POST", "https://api.githubcopilot.com/mcp/", headers={"content-type": "application/json"},
    body=b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add_issue_comment",'
         b'"arguments":{"owner":"team","repo":"app","issue_number":1,"body":"looks good"}}}',
)


def test_decide_mcp_tool_call(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    """A tools/call to GitHub's hosted MCP server (the built-in [mcp.github] endpoint)."""
    if "mcp.github" not in engine.adapters:
        pytest.skip("the GitHub adapter (gitvow-github) is not installed here")
    decision = benchmark(engine.decide, MCP_CALL, CALLER)
    assert decision.action is Action.FORWARD and decision.classification is not None
    assert decision.classification.operations == ("issue.comment",)
