"""Bitbucket decisions in-process, and what the canonical path costs when a path is encoded.

Run: ``pytest benchmarks/bench_bitbucket.py --benchmark-only`` (figures in docs/benchmarks.md).
CI runs it with ``--benchmark-disable`` so it stays correct; timings are never asserted.
"""

from __future__ import annotations

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.paths import canonical_path
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.request import Request

pytest.importorskip("gitvow_bitbucket", reason="the Bitbucket adapter plugin is not installed")

CALLER = Caller("bench", Grant(Mode.ISSUES_PRS_MERGE))
DC = "https://bitbucket.example.test/rest/api/1.0/projects/PROJ/repos/app"
REQUESTS = {
    "cloud-decline": Request.from_url("POST", "https://api.bitbucket.org/2.0/repositories/team/app/pullrequests/7/decline"),
    "cloud-decline-encoded": Request.from_url(
        "POST", "https://api.bitbucket.org/2.0/repositories/te%61m/%61pp/pullrequests/7/decline"),
    "cloud-read": Request.from_url("GET", "https://api.bitbucket.org/2.0/repositories/team/app/pullrequests?state=OPEN"),
    "dc-comment": Request.from_url("POST", f"{DC}/pull-requests/7/comments", body=b'{"text": "ok"}'),
}


@pytest.fixture(scope="module")
def engine() -> Engine:
    plugins = installed()
    return Engine(Policy(hosts={"bitbucket.example.test": "bitbucket"}, relays=plugins.relays), plugins)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_decide(benchmark, engine: Engine, name: str) -> None:  # type: ignore[no-untyped-def]
    decision = benchmark(engine.decide, REQUESTS[name], CALLER)
    assert decision.action is Action.FORWARD


@pytest.mark.parametrize("path", ["/2.0/repositories/team/app/pullrequests/7/decline",
                                  "/2.0/repositories/te%61m/%61pp/pullrequests/7/decline"])
def test_canonical_path(benchmark, path: str) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(canonical_path, path) == "/2.0/repositories/team/app/pullrequests/7/decline"
