"""What resolving targets adds to a decision (the proxy's pipeline with its live gates).

A GitHub ``addComment(subjectId:)`` names its pull request by node id. Rows:

- ``unconstrained``: no repository gate in force; the pipeline asks the gates whether any
  applies and resolves nothing (the cost of that question is the difference to ``no-step``);
- ``no-step``: the same request with a gates object that skips the resolution step
  altogether, i.e. the decision as it was before targets existed;
- ``paused-cached``: ``[run_state] paused`` names another repository, so the node must be
  resolved, and the answer is in the cache (the steady state: one lookup per node per TTL).

Run: ``pytest benchmarks/bench_targets.py --benchmark-only`` (figures in docs/benchmarks.md). The
store is SQLite, as the proxy's default. CI runs it with ``--benchmark-disable``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitvow.gates import Caller, Context
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Classification, Request, Resolution, Target
from gitvow_proxy.gates import ProxyGates, resolution_scope
from gitvow_proxy.store import open_store

pytest.importorskip("gitvow_github")

HOST = "api.github.com"
NODE = "PR_kwDOAbc123"
REQUEST = Request.from_url(
    "POST", f"https://{HOST}/graphql",
    body=json.dumps({"query": "mutation($id: ID!, $b: String!) { addComment(input: {subjectId: $id, body: $b}) "
                              "{ clientMutationId } }", "variables": {"id": NODE, "b": "looks good"}}).encode(),
)


class NoResolutionStep(ProxyGates):
    def resolve(self, ctx: Context) -> Classification:
        return ctx.classification


def _setup(tmp_path: Path, extra: dict[str, Any], gates_type: type[ProxyGates] = ProxyGates) -> tuple[Engine, ProxyGates, Caller]:
    policy = parse_policy({"agents": {"bot": {"mode": "issues_and_prs"}}, **extra})
    engine = Engine(policy, installed())
    gates = gates_type(policy, open_store(str(tmp_path / "state.sqlite")), credentials={"github": "tok"}, canaries={})
    grant = policy.grant_for("bot")
    assert grant is not None
    scope = resolution_scope("github", HOST, 443)
    gates.resolutions.store(scope, [Target("node", NODE, at="/graphql")],
                            {Target("node", NODE, at="/graphql"): Resolution("team/app", "PullRequest")})
    return engine, gates, Caller("bot", grant)


@pytest.mark.parametrize(
    ("row", "extra", "gates_type"),
    [
        ("no-step", {}, NoResolutionStep),
        ("unconstrained", {}, ProxyGates),
        ("paused-cached", {"run_state": {"paused": ["team/other"]}}, ProxyGates),
    ],
    ids=["no-step", "unconstrained", "paused-cached"],
)
def test_decide(benchmark, tmp_path: Path, row: str, extra: dict[str, Any], gates_type: type[ProxyGates]) -> None:  # type: ignore[no-untyped-def]
    engine, gates, caller = _setup(tmp_path, extra, gates_type)
    decision = benchmark(engine.decide, REQUEST, caller, gates)
    assert decision.action is Action.FORWARD
    assert decision.classification is not None
    resolved = decision.classification.repos == ("team/app",)
    assert resolved is (row == "paused-cached")
