"""What the GitLab adapter adds per request: classify, and classify + evaluate through the Engine.

Run: ``pytest benchmarks/bench_gitlab.py --benchmark-only`` (figures in
the plugin README). Timings are measured here and never asserted.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.relay import APPROVAL
from gitvow.request import Request

gitlab_plugin = pytest.importorskip("gitvow_gitlab.adapter")
GitLabAdapter = gitlab_plugin.GitLabAdapter

CALLER = Caller("bench", Grant(Mode.ISSUES_AND_PRS))
GRAPHQL = "https://gitlab.com/api/graphql"


def inventory_requests() -> list[Request]:
    """One request per route of the committed inventory (reads and writes)."""
    out = []
    for line in files("gitvow_gitlab").joinpath("data/rest_routes.tsv").read_text().splitlines():
        if line.startswith("#"):
            continue
        method, template, _ = line.split("\t")
        parts = template.strip("/").split("/")
        path = "/".join(
            ("group%2Fproj" if i == 1 and parts[0] == "projects" else "7") if s.startswith(":") else s
            for i, s in enumerate(parts)
        )
        out.append(Request.from_url(method, f"https://gitlab.com/api/v4/{path}", body=b'{"title": "t"}',
                                    headers={"content-type": "application/json"}))
    return out


@pytest.fixture(scope="module")
def adapter() -> Any:
    return GitLabAdapter()


@pytest.fixture(scope="module")
def engine(adapter: Any) -> Engine:
    plugins = Plugins.of(adapters=[adapter], relays=[APPROVAL])
    return Engine(Policy(), plugins)


def test_classify_rest_full_inventory(benchmark, adapter: Any) -> None:  # type: ignore[no-untyped-def]
    requests = itertools.cycle(inventory_requests())
    benchmark(lambda: adapter.classify(next(requests)))


def test_decide_rest_full_inventory(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    requests = itertools.cycle(inventory_requests())
    benchmark(lambda: engine.decide(next(requests), CALLER))


def test_decide_rest_merge_relay(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    request = Request.from_url("PUT", "https://gitlab.com/api/v4/projects/group%2Fproj/merge_requests/7/merge", body=b"{}")
    decision = benchmark(engine.decide, request, CALLER)
    assert decision.reason == "hard_deny"


def _fresh_documents() -> Iterator[Request]:
    for i in itertools.count():
        query = (f'mutation Edit{i} {{ a{i}: mergeRequestUpdate(input: {{projectPath: "g/p", iid: "{i}", '
                 f'title: "t"}}) {{ errors }} }}')
        yield Request.from_url("POST", GRAPHQL, body=json.dumps({"query": query}).encode())


def test_decide_graphql_first_seen(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    documents = _fresh_documents()
    benchmark(lambda: engine.decide(next(documents), CALLER))


def test_decide_graphql_seen_before(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    query = 'mutation { mergeRequestUpdate(input: {projectPath: "g/p", iid: "1", title: "t"}) { errors } }'
    request = Request.from_url("POST", GRAPHQL, body=json.dumps({"query": query}).encode())
    engine.decide(request, CALLER)
    benchmark(engine.decide, request, CALLER)


def _note(text: str) -> Request:
    return Request.from_url("POST", "https://gitlab.com/api/v4/projects/group%2Fproj/merge_requests/7/notes",
                            headers={"content-type": "application/json"}, body=json.dumps({"body": text}).encode())


@pytest.mark.parametrize(
    "text",
    ["Looks good to me, thanks for the fix.\nI left two small comments inline.",
     "Looks good to me.\n/label ~ready\n/assign me",
     ("Some paragraph text. " * 40 + "\n") * 20,
     ("Some paragraph text. " * 40 + "\n") * 20 + "/merge"],
    ids=["note", "note-2-quick-actions", "note-16KiB", "note-16KiB-merge"],
)
def test_classify_note_quick_actions(benchmark, adapter: Any, text: str) -> None:  # type: ignore[no-untyped-def]
    """A note is read for quick actions on every request (what GitLab would run from it)."""
    benchmark(adapter.classify, _note(text))


def _fresh_notes() -> Iterator[Request]:
    for i in itertools.count():
        query = (f'mutation Note{i} {{ createNote(input: {{noteableId: "gid://gitlab/MergeRequest/{i}", '
                 f'body: "LGTM {i}"}}) {{ errors }} }}')
        yield Request.from_url("POST", GRAPHQL, body=json.dumps({"query": query}).encode())


def test_decide_graphql_note_first_seen(benchmark, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    notes = _fresh_notes()
    benchmark(lambda: engine.decide(next(notes), CALLER))
