"""gitvow-github decision cost: classify + evaluate, over the whole REST inventory and for GraphQL.

Two ways to run it:

- ``python benchmarks/bench_github.py`` prints the figures of docs/benchmarks.md: the median (and p90,
  max) per-request decision time over one concrete request for *every* route of the
  committed REST inventory, and GraphQL first-seen and cached documents.
- ``pytest benchmarks/bench_github.py --benchmark-only`` runs the same requests under
  pytest-benchmark. CI runs it with ``--benchmark-disable`` so it stays correct; timings
  are never asserted.

"Decision" is ``Engine.decide`` with the default gates: host lookup, classification, the
policy verdict and the stage loop, which is what the proxy adds before forwarding.
"""

from __future__ import annotations

import functools
import itertools
import re
import statistics
import sys
import timeit
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("gitvow_github")

from graphql import parse

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.graphql import TOKEN_LIMIT
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import installed
from gitvow.policy.load import Policy
from gitvow.request import Request
from gitvow_github.fixtures import gql
from gitvow_github.inventory import rest_routes

CALLER = Caller("bench", Grant(Mode.ISSUES_AND_PRS))
_SAMPLES = {"owner": "octo", "repo": "app", "path": "docs/guide/intro.md", "ref": "heads/feature/x", "branch": "release/2.x"}
SMALL_MUTATION = "mutation {{ {alias}: addComment(input: {{subjectId: \"I_kwDOA\", body: \"LGTM\"}}) {{ clientMutationId }} }}"


def make_engine() -> Engine:
    plugins = installed()
    return Engine(Policy(relays=plugins.relays), plugins)


def inventory_requests() -> list[Request]:
    """One concrete request per route of the committed inventory."""
    def fill(template: str) -> str:
        return re.sub(r"\{([^}]+)\}", lambda m: _SAMPLES.get(m.group(1), "42"), template)

    return [Request.from_url(r.method, "https://api.github.com" + fill(r.path), body=b"{}") for r in rest_routes()]


def first_seen_bodies() -> Iterator[bytes]:
    """Small mutations never seen before: each has a fresh alias, so each is a cache miss."""
    for n in itertools.count():
        yield gql(SMALL_MUTATION.format(alias=f"c{n}"))


CACHED = gql(SMALL_MUTATION.format(alias="cached"))
GRAPHQL_URL = "https://api.github.com/graphql"


def per_call(fn: Callable[[], object], number: int = 200, repeat: int = 5) -> float:
    """Best-of-``repeat`` mean seconds per call over ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> int:
    engine = make_engine()
    requests = inventory_requests()
    for request in requests:  # warm: build the trie, load the tables
        engine.decide(request, CALLER)
    times = sorted(per_call(functools.partial(engine.decide, request, CALLER)) for request in requests)
    us = [t * 1e6 for t in times]
    print(f"REST decide over {len(us)} inventory routes: median {statistics.median(us):.2f} µs, "
          f"p90 {us[int(len(us) * 0.9)]:.2f} µs, max {us[-1]:.2f} µs")

    bodies = first_seen_bodies()
    fresh = [Request.from_url("POST", GRAPHQL_URL, body=next(bodies)) for _ in range(20000)]
    it = iter(fresh)
    first = per_call(lambda: engine.decide(next(it), CALLER), number=2000, repeat=5)
    print(f"GraphQL first-seen small mutation: {first * 1e6:.2f} µs")
    texts = (SMALL_MUTATION.format(alias=f"p{n}") for n in itertools.count())
    parse_only = per_call(lambda: parse(next(texts), no_location=True, max_tokens=TOKEN_LIMIT), number=2000)
    print(f"  of which graphql-core parse alone: {parse_only * 1e6:.2f} µs")
    cached = Request.from_url("POST", GRAPHQL_URL, body=CACHED)
    engine.decide(cached, CALLER)
    print(f"GraphQL cached document: {per_call(lambda: engine.decide(cached, CALLER), number=5000) * 1e6:.2f} µs")
    return 0


# -- pytest-benchmark --------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Engine:
    return make_engine()


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/repos/octo/app/pulls"), ("PUT", "/repos/octo/app/pulls/7/merge"),
     ("DELETE", "/repos/octo/app/git/refs/heads/feature/x"), ("GET", "/repos/octo/app/contents/a/b/c.md"),
     ("POST", "/orgs/acme/actions/runners/registration-token")],
)
def test_rest_decide(benchmark, engine: Engine, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    request = Request.from_url(method, "https://api.github.com" + path, body=b"{}")
    decision = benchmark(engine.decide, request, CALLER)
    assert decision.classification is not None
    assert decision.classification.operations[0] != "unknown" or "orgs" in path


def test_rest_decide_whole_inventory(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    """One round decides every route once; divide the time by the route count."""
    requests = inventory_requests()

    def run() -> None:
        for request in requests:
            engine.decide(request, CALLER)

    benchmark(run)


def test_graphql_first_seen(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    bodies = first_seen_bodies()
    decision = benchmark(lambda: engine.decide(Request.from_url("POST", GRAPHQL_URL, body=next(bodies)), CALLER))
    assert decision.classification is not None and decision.classification.operations == ("issue.comment",)


def test_graphql_cached(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    request = Request.from_url("POST", GRAPHQL_URL, body=CACHED)
    decision = benchmark(engine.decide, request, CALLER)
    assert decision.classification is not None and decision.classification.operations == ("issue.comment",)


if __name__ == "__main__":
    sys.exit(main())
