"""Every installed adapter's write, respelled the way a front end would rewrite, is refused by
the pipeline (``path_not_canonical``) before the adapter reads it: one rule for every forge."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gitvow.adapter import Adapter
from gitvow.evaluator import Grant
from gitvow.gates import NO_GATES, Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.paths import PATH_NOT_CANONICAL
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy, parse_policy
from gitvow.repos import matches_any
from gitvow.request import Fixture, Request
from gitvow.verdict import Verdict
from gitvow.vocabulary import writes


def _writes() -> list[tuple[str, Fixture]]:
    found = []
    for name, adapter in sorted(installed().adapters.items()):
        fixture = next((f for f in adapter.fixtures() if not f.near_miss and any(map(writes, f.operations))), None)
        if fixture is not None:
            found.append((name, fixture))
    return found


def _respell(path: str, how: str) -> str:
    head, _, tail = path.rpartition("/")
    if how == "double-slash":
        return f"{head}//{tail}"
    if how == "dot":
        return f"{head}/./{tail}"
    if how == "dot-dot":
        return f"{head}/x/../{tail}"
    return f"{head}/%2e%2E/{tail}"


@pytest.mark.parametrize("how", ["double-slash", "dot", "dot-dot", "encoded-dot-dot"])
@pytest.mark.parametrize(("name", "fixture"), _writes(), ids=[name for name, _ in _writes()])
def test_a_respelled_write_is_refused_for_every_adapter(name: str, fixture: Fixture, how: str) -> None:
    request = fixture.request()
    host = request.host if request.port == 443 else f"{request.host}:{request.port}"
    engine = Engine(parse_policy({"hosts": {host: name}}), installed())
    assert engine.classify(request)[1] is not None
    respelled = Request(request.method, request.host, _respell(request.path, how), request.query, request.headers,
                        request.body, request.port, request.scheme)
    adapter, classification = engine.classify(respelled)
    assert adapter is not None and adapter.name == name
    assert classification is not None and classification.unknown_code == PATH_NOT_CANONICAL, (name, respelled.path)


# -- a naive adapter (it matches the raw path with a regular expression) cannot dodge a gate --

_NAIVE_SPELLINGS = ["/repos/o/r/pulls/1/merge", "/repos/%6f/r/pulls/1/merge", "/repos/o/%72/pulls/1/merge",
                    "/repos/%6F/%72/pulls/1/%6derge", "/repos/o/r/pulls/%31/merge"]


def _toy() -> Adapter:
    spec = importlib.util.spec_from_file_location("broken_adapters", Path(__file__).parent / "broken_adapters.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    toy: Adapter = module.ToyAdapter()
    return toy


class _PausesOR(Gates):
    """Stands in for ``[run_state] paused = ["o/r"]``: the gate reads only the classified repositories."""

    def run_state(self, ctx: Context) -> Verdict | None:
        if matches_any_repo(ctx.classification.repos, ["o/r"]):
            return Verdict.deny("repo_paused", "o/r is paused")
        return None


def matches_any_repo(repos: tuple[str, ...], patterns: list[str]) -> bool:
    return any(matches_any(repo, patterns) for repo in repos)


@pytest.mark.parametrize("path", _NAIVE_SPELLINGS)
def test_a_naive_adapter_reads_encoded_unreserved_characters_as_the_forge_does(path: str) -> None:
    toy = _toy()
    engine = Engine(Policy(hosts={"toy.example.test": "toy"}), Plugins.of(adapters=[toy]))
    request = Request("PUT", "toy.example.test", path)
    _, classification = engine.classify(request)
    assert classification is not None and classification.operations == ("pr.merge",)
    assert classification.repo == "o/r"
    # autonomy lowers o/r to issues_only: the merge is refused whatever the spelling
    grant = Grant(Mode.ISSUES_PRS_MERGE, autonomy={"o/r": Mode.ISSUES_ONLY})
    decision = engine.decide(request, Caller("bot", grant), NO_GATES)
    assert decision.action is Action.DENY and decision.reason in ("mode_denied", "hard_deny")
    paused = engine.decide(request, Caller("bot", Grant(Mode.ISSUES_PRS_MERGE)), _PausesOR())
    assert paused.action is Action.DENY and paused.reason == "repo_paused"


def test_the_forwarded_request_keeps_its_spelling_and_encoded_dots_are_still_dot_segments() -> None:
    toy = _toy()
    engine = Engine(Policy(hosts={"toy.example.test": "toy"}), Plugins.of(adapters=[toy]))
    _, refused = engine.classify(Request("PUT", "toy.example.test", "/repos/o/r/pulls/1/%2E/merge"))
    assert refused is not None and refused.unknown_code == PATH_NOT_CANONICAL
    _, kept = engine.classify(Request("GET", "toy.example.test", "/repos/o/r/a%20b"))
    assert kept is not None and kept.operations == ("read",)
