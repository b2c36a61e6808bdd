"""Decision cost on a Gitea host: classify + evaluate through the engine, REST and git.

Run: ``pytest benchmarks/bench_gitea.py --benchmark-only`` (figures in the plugin's README).
The write routes are found by the segment trie; the deepest ones are the worst case.
"""

from __future__ import annotations

import re

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import load
from gitvow.policy.load import Policy
from gitvow.request import Request

pytest.importorskip("gitvow_gitea")

from gitvow_gitea.adapter import TRIE
from gitvow_gitea.routes import ROUTES

CALLER = Caller("bench", Grant(Mode.ISSUES_AND_PRS))
API = "https://codeberg.org/api/v1/repos/team/app"
REQUESTS = {
    "get-pull": Request.from_url("GET", f"{API}/pulls/7"),
    "issue-comment": Request.from_url("POST", f"{API}/issues/3/comments", body=b'{"body": "x"}'),
    "review-dismissal": Request.from_url("POST", f"{API}/pulls/7/reviews/9/undismissals", body=b"{}"),
    "contents-deep-path": Request.from_url("PUT", f"{API}/contents/a/b/c/d/e/f.md", body=b"{}"),
    "unknown-route": Request.from_url("POST", f"{API}/pulls/7/reviews/9/nothing", body=b"{}"),
    "git-info-refs": Request.from_url("GET", "https://codeberg.org/team/app.git/info/refs?service=git-upload-pack"),
}


@pytest.fixture(scope="module")
def engine() -> Engine:
    plugins = load()
    return Engine(Policy(relays=plugins.relays), plugins)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_decide(benchmark, engine: Engine, name: str) -> None:  # type: ignore[no-untyped-def]
    decision = benchmark(engine.decide, REQUESTS[name], CALLER)
    assert decision.classification is not None


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_classify(benchmark, engine: Engine, name: str) -> None:  # type: ignore[no-untyped-def]
    adapter = engine.plugins.adapters["gitea"]
    result = benchmark(adapter.classify, REQUESTS[name])
    assert result.operations


# -- the trie against the linear regular-expression scan it replaces ------------------------

def _regex_table() -> list[tuple[str, re.Pattern[str], object]]:
    table = []
    for route in ROUTES:
        parts = []
        for segment in route.template.strip("/").split("/"):
            if segment == "**" or (segment.startswith("{") and segment.endswith("*}")):
                parts.append(".+")
            elif segment.startswith("{"):
                parts.append("[^/]+")
            else:
                parts.append(re.escape(segment))
        table.append((route.method, re.compile("^/" + "/".join(parts) + "$"), route))
    return table


SCAN = _regex_table()
DEEP = ("POST", "repos/team/app/pulls/7/reviews/9/undismissals")


def _scan(method: str, path: str) -> object | None:
    for route_method, pattern, route in SCAN:
        if (route_method == method or route_method == "*") and pattern.match(path):
            return route
    return None


def test_route_lookup_trie(benchmark) -> None:  # type: ignore[no-untyped-def]
    segments = DEEP[1].split("/")
    assert benchmark(TRIE.match, DEEP[0], segments) is not None


def test_route_lookup_regex_scan(benchmark) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(_scan, DEEP[0], "/" + DEEP[1]) is not None
