"""Repository gates over targets, in-process: every repository a request names is checked, a
write whose repository cannot be established is ``repo_unresolved`` when (and only when) a
repository gate is in force, and targets are resolved through the adapter by a real HTTP
lookup to a recording forge, once per cache lifetime."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from gitvow import plugins
from gitvow.adapter import Adapter
from gitvow.gates import Caller
from gitvow.hookspecs import hookimpl
from gitvow.needs import Lookup
from gitvow.pipeline import Action, Decision, Engine
from gitvow.policy.load import parse_policy
from gitvow.request import Classification, Request, Resolution, Target
from gitvow.targets import Fetch
from gitvow.testing import RecordingServer, Seen
from gitvow_proxy.answers import Answers, LastFlags
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, MemoryStore

#: What the recording forge says each node is.
NODES: dict[str, dict[str, str]] = {
    "R1": {"type": "Repository", "repo": "team/app"},
    "R2": {"type": "Repository", "repo": "team/open"},
    "P7": {"type": "PullRequest", "repo": "team/open"},
    "I8": {"type": "Issue", "repo": "team/open"},
    "U1": {"type": "User", "repo": ""},
}


class NodeForge(Adapter):
    """``POST /write`` with a JSON body naming ``ops``, literal ``repos`` and node ``ids``;
    ``PATCH /item/ID`` is ``issue.edit`` unless the forge says ID is a pull request."""

    name = "nodeforge"
    default_hosts = ("127.0.0.1",)

    def classify(self, request: Request) -> Classification:
        if request.method == "GET":
            return Classification(("read",))
        if request.path.startswith("/item/"):
            node = request.path.rsplit("/", 1)[1]
            return Classification(("issue.edit",), targets=(Target("node", node, by_type=(("PullRequest", ("pr.edit",)),)),))
        data = json.loads(request.body)
        return Classification(tuple(data["ops"]), repos=tuple(data.get("repos", ())),
                              targets=tuple(Target("node", i) for i in data.get("ids", ())))

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        status, body = fetch("POST", "/lookup", json.dumps([t.value for t in targets]).encode())
        if status != 200:
            return {}
        answer = json.loads(body)
        return {t: Resolution(answer[t.value]["repo"] or None, answer[t.value]["type"]) for t in targets
                if t.value in answer}


class Plugin:
    @hookimpl
    def register_adapters(self, register: Callable[[Adapter], None]) -> None:
        register(NodeForge())


def _forge(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    if seen.route != "/lookup":
        return 404, {}, b""
    ids = json.loads(seen.body)
    return 200, {"Content-Type": "application/json"}, json.dumps({i: NODES[i] for i in ids if i in NODES}).encode()


@pytest.fixture(scope="module")
def forge() -> Iterator[RecordingServer]:
    with RecordingServer(_forge) as server:
        yield server


class Harness:
    def __init__(self, forge: RecordingServer, extra: Mapping[str, Any] | None = None) -> None:
        self.forge = forge
        data: dict[str, Any] = {
            "agents": {"bot": {"mode": "issues_and_prs"}, "merger": {"mode": "issues_prs_merge"},
                       "scoped": {"mode": "issues_and_prs", "repos": ["team/open"]},
                       "mixed": {"mode": "issues_and_prs", "autonomy": {"team/app": "advisory"}},
                       "raised": {"mode": "advisory", "autonomy": {"team/open": "issues_and_prs"}}},
            "proxy": {"plain_hosts": ["127.0.0.1"]},
            "operations": {"pr.merge": {"min_mode": "issues_prs_merge"}},  # not relayed, so it can pass
            **(extra or {}),
        }
        self.policy = parse_policy(data)
        self.engine = Engine(self.policy, plugins.load(entry_points=False, extra=[("nodeforge", Plugin())]))
        self.store = MemoryStore()
        self.gates = ProxyGates(self.policy, self.store, credentials={"nodeforge": "tok-9"}, canaries={})
        self.lookups = 0
        self.worker = ThreadPoolExecutor(max_workers=1)

    def decide(self, agent: str, method: str, path: str, body: object = None) -> Decision:
        raw = json.dumps(body).encode() if body is not None else b""
        request = Request.from_url(method, f"{self.forge.url}{path}", body=raw)
        grant = self.policy.grant_for(agent)
        assert grant is not None
        return self.decide_request(request, Caller(agent, grant))

    def decide_request(self, request: Request, caller: Caller) -> Decision:
        """As the enforcement addon decides: each need answered by its :class:`Answers`, a
        target the cache does not know asked of the forge (counted in ``lookups``)."""

        async def judged() -> Decision:
            answers = Answers(self.engine, self.gates, request, self.worker, LastFlags(self), lambda: None)
            judging = self.engine.judge(request, caller, self.gates)
            reply: object = None
            while True:
                try:
                    need = judging.send(reply)
                except StopIteration as done:
                    decision: Decision = done.value
                    return decision
                if isinstance(need, Lookup) and self.gates.resolutions.lookup(need.scope, need.targets)[1]:
                    self.lookups += 1
                reply = await answers.answer(need)

        return asyncio.run(judged())


def reason(decision: Decision) -> str | None:
    return decision.reason if decision.action is not Action.FORWARD else None


def write(ops: Sequence[str] = ("issue.comment",), repos: Sequence[str] = (), ids: Sequence[str] = ()) -> dict[str, Any]:
    return {"ops": list(ops), "repos": list(repos), "ids": list(ids)}


def test_unconstrained_deployment_never_asks_and_refuses_nothing_new(forge: RecordingServer) -> None:
    h = Harness(forge)
    forge.clear()
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R1"]))) is None
    assert reason(h.decide("bot", "POST", "/write", write())) is None  # no repository at all
    assert h.lookups == 0 and forge.seen == []


def test_a_paused_repository_named_by_node_id_is_refused_after_one_lookup(forge: RecordingServer) -> None:
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    forge.clear()
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R1"]))) == "repo_paused"
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R1"]))) == "repo_paused"
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R2", "U1"]))) is None  # a user adds no repository
    assert h.lookups == 2  # R1 once (then cached), R2 + U1 in one go
    (first, second) = forge.seen
    assert first.headers["authorization"] == "Bearer tok-9" and json.loads(first.body) == ["R1"]
    assert sorted(json.loads(second.body)) == ["R2", "U1"]


def test_every_repository_of_a_request_is_checked(forge: RecordingServer) -> None:
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    assert reason(h.decide("bot", "POST", "/write", write(repos=["team/open", "team/app"]))) == "repo_paused"
    assert reason(h.decide("bot", "POST", "/write", write(repos=["team/open"], ids=["R1"]))) == "repo_paused"
    assert reason(h.decide("scoped", "POST", "/write", write(repos=["team/open", "other/x"]))) == "agent_repo_scope"
    assert reason(h.decide("scoped", "POST", "/write", write(repos=["team/open"]))) is None


@pytest.mark.parametrize(
    ("extra", "agent", "ops"),
    [
        ({"run_state": {"paused": ["team/app"]}}, "bot", ["issue.comment"]),
        ({"run_state": {"auto_merge_off": ["team/app"]}}, "merger", ["pr.merge"]),
        ({"proxy": {"allowed_repos": ["team/*"], "plain_hosts": ["127.0.0.1"]}}, "bot", ["issue.comment"]),
        ({}, "scoped", ["issue.comment"]),
        ({}, "mixed", ["issue.comment"]),
    ],
    ids=["paused", "auto-merge-off", "allowed-repos", "agent-scope", "autonomy"],
)
def test_each_repository_gate_refuses_an_unresolved_write(
    forge: RecordingServer, extra: dict[str, Any], agent: str, ops: list[str]
) -> None:
    h = Harness(forge, extra)
    assert reason(h.decide(agent, "POST", "/write", write(ops, ids=["GONE"]))) == "repo_unresolved"  # forge: not found
    assert reason(h.decide(agent, "POST", "/write", write(ops))) == "repo_unresolved"  # names none
    assert reason(h.decide(agent, "POST", "/write", write(ops, ids=["R2"]))) is None


def test_paused_at_run_time_constrains_too(forge: RecordingServer) -> None:
    h = Harness(forge)
    assert reason(h.decide("bot", "POST", "/write", write(ids=["GONE"]))) is None
    h.store.set_flag(PAUSED, "team/app", True)
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R1"]))) == "repo_paused"
    assert reason(h.decide("bot", "POST", "/write", write(ids=["GONE"]))) == "repo_unresolved"
    h.store.set_flag(PAUSED, "team/app", False)
    h.store.set_flag(AUTO_MERGE_OFF, "team/app", True)
    assert reason(h.decide("merger", "POST", "/write", write(["pr.merge"], ids=["R1"]))) == "repo_auto_merge_disabled"
    assert reason(h.decide("merger", "POST", "/write", write(["issue.comment"], ids=["GONE"]))) is None


def test_autonomy_takes_the_lowest_mode_of_every_repository(forge: RecordingServer) -> None:
    h = Harness(forge)
    assert reason(h.decide("mixed", "POST", "/write", write(ids=["R2"]))) is None
    assert reason(h.decide("mixed", "POST", "/write", write(ids=["R2", "R1"]))) == "mode_denied"
    # Autonomy that only raises: an unknown repository falls back to the agent's own mode.
    assert reason(h.decide("raised", "POST", "/write", write(ids=["GONE"]))) == "mode_denied"
    assert reason(h.decide("raised", "POST", "/write", write(ids=["R2"]))) is None


def test_the_forge_settles_an_operation_that_depends_on_the_object(forge: RecordingServer) -> None:
    h = Harness(forge, {"agents": {"triager": {"mode": "issues_only"}}})
    assert reason(h.decide("triager", "PATCH", "/item/I8")) is None
    decision = h.decide("triager", "PATCH", "/item/P7")
    assert reason(decision) == "mode_denied" and decision.classification is not None
    assert decision.classification.operations == ("pr.edit",)
    assert reason(h.decide("triager", "PATCH", "/item/GONE")) == "repo_unresolved"  # fail closed


def test_a_forge_that_is_down_is_repo_unresolved(forge: RecordingServer, caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    request = Request.from_url("POST", "http://127.0.0.1:9/write", body=json.dumps(write(ids=["R2"])).encode())
    grant = h.policy.grant_for("bot")
    assert grant is not None
    # the lookup fails (connection refused): the target stays unresolved and the write is refused
    with caplog.at_level(logging.WARNING, logger="gitvow_proxy"):
        assert reason(h.decide_request(request, Caller("bot", grant))) == "repo_unresolved"
    # logged with what failed, not just its class
    assert "adapter 'nodeforge' could not resolve 1 target(s) on " in caplog.text
    assert ": ConnectionRefusedError: [Errno 111] Connection refused" in caplog.text, caplog.text
    assert reason(h.engine.decide(request, Caller("bot", grant), h.gates)) == "repo_unresolved"  # remembered


def test_a_failed_lookup_is_logged_on_one_line_without_its_credential() -> None:
    from gitvow_proxy.resolver import FAILURE_LIMIT, failure

    said = failure(ValueError("the forge said:\n  bad token tok-9 (Basic eC1hY2Nlc3M6dG9rLTk=)"),
                   ["tok-9", "Basic eC1hY2Nlc3M6dG9rLTk=", "eC1hY2Nlc3M6dG9rLTk="])
    assert said == "ValueError: the forge said: bad token [redacted] ([redacted])"
    assert failure(TimeoutError()) == "TimeoutError"
    assert len(failure(OSError("x" * 1000))) == len("OSError: ") + FAILURE_LIMIT


def test_answers_survive_a_reload_unless_the_cache_settings_change(tmp_path: Any) -> None:
    from gitvow_proxy.runtime import build_runtime

    policy = tmp_path / "policy.toml"
    policy.write_text('[agents.bot]\nmode = "advisory"\n')
    store = MemoryStore()
    first = build_runtime(policy, store)
    first.gates.resolutions.store("s", [Target("node", "A")], {Target("node", "A"): Resolution("o/r")})
    again = build_runtime(policy, store, previous=first)
    assert again.gates.resolutions is first.gates.resolutions
    policy.write_text('[agents.bot]\nmode = "advisory"\n\n[proxy]\nresolve_ttl = 60\n')
    changed = build_runtime(policy, store, previous=again)
    assert changed.gates.resolutions is not first.gates.resolutions and len(changed.gates.resolutions) == 0


def test_nothing_is_asked_for_a_read_or_an_unknown_operation(forge: RecordingServer) -> None:
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    forge.clear()
    assert reason(h.decide("bot", "POST", "/write", write(["read"], ids=["R1"]))) is None
    assert reason(h.decide("bot", "POST", "/write", write(["unknown"], ids=["R1"]))) == "mode_denied"
    assert h.lookups == 0 and forge.seen == []


def test_a_request_naming_too_many_ids_is_not_looked_up(forge: RecordingServer) -> None:
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    forge.clear()
    assert reason(h.decide("bot", "POST", "/write", write(ids=["R2"] + [f"U{i}" for i in range(100)]))) == "repo_unresolved"
    assert h.lookups == 0 and forge.seen == []


def test_a_request_the_policy_refuses_whatever_it_names_asks_the_forge_nothing(forge: RecordingServer) -> None:
    """An issues-only agent's pull-request write is refused by its mode, whatever repository
    the opaque id names: the forge is never asked (a pause on every repository is in force, so
    an allowed write would be looked up). With per-repository autonomy the mode depends on the
    repository, so it is looked up."""
    h = Harness(forge, {"run_state": {"paused": ["team/app"]}, "agents": {"triager": {"mode": "issues_only"}}})
    forge.clear()
    decision = h.decide("triager", "POST", "/write", write(("pr.edit",), ids=["R1"]))
    assert reason(decision) == "mode_denied" and decision.stage == "policy"
    assert h.lookups == 0 and forge.seen == []
    assert reason(h.decide("triager", "POST", "/write", write(ids=["R1"]))) == "repo_paused"  # allowed by mode: asked
    assert h.lookups == 1
    raised = Harness(forge, {"run_state": {"paused": ["team/app"]}})
    assert reason(raised.decide("raised", "POST", "/write", write(ids=["R1"]))) == "repo_paused"
    assert raised.lookups == 1
