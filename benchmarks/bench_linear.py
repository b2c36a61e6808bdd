"""Decision cost on Linear's GraphQL host: classify + evaluate through the engine.

Run: ``pytest benchmarks/bench_linear.py --benchmark-only`` (figures in the plugin's README).
"First seen" sends a document the reader has not parsed before on every round (a fresh alias
makes each text unique); "seen before" repeats one document, which the reader's cache serves.
"""

from __future__ import annotations

import itertools
import json

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.request import Request

pytest.importorskip("gitvow_linear")

CALLER = Caller("bench", Grant(Mode.ISSUES_AND_PRS))
URL = "https://api.linear.app/graphql"
MUTATION = (
    "mutation createComment($input: CommentCreateInput!) {{ c{n}: commentCreate(input: $input) {{ ...CommentPayload }} }}\n"
    "fragment CommentPayload on CommentPayload {{ __typename lastSyncId success comment {{ id body }} }}"
)


def request(query: str) -> Request:
    body = json.dumps({"query": query, "variables": {"input": {"issueId": "i", "body": "b"}}}).encode()
    return Request.from_url("POST", URL, headers={"content-type": "application/json"}, body=body)


@pytest.fixture(scope="module")
def engine() -> Engine:
    plugins = installed()
    return Engine(Policy(relays=plugins.relays), plugins)


def test_mutation_first_seen(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    counter = itertools.count()

    def setup() -> tuple[tuple[Request, Caller], dict[str, object]]:
        return (request(MUTATION.format(n=next(counter))), CALLER), {}

    decision = benchmark.pedantic(engine.decide, setup=setup, rounds=2000, warmup_rounds=50)
    assert decision.action is Action.FORWARD


def test_mutation_seen_before(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    seen = request(MUTATION.format(n=0))
    decision = benchmark(engine.decide, seen, CALLER)
    assert decision.action is Action.FORWARD
