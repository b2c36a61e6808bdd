"""The proxy's gates inside the real pipeline (``Engine.decide``), with a small test adapter:
stage order, reason codes, budgets, body gates and credentials, in-process and fast."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from gitvow import plugins
from gitvow.adapter import Adapter
from gitvow.gates import Caller, Context
from gitvow.hookspecs import hookimpl
from gitvow.issues import draft_from_json
from gitvow.pipeline import Action, Decision, Engine
from gitvow.policy.load import parse_policy
from gitvow.request import Classification, Request
from gitvow_proxy.answers import Answers, LastFlags, drive
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.store import PAUSED, Admission, MemoryStore

ROUTES: list[tuple[str, str, str]] = [
    ("POST", r"/repos/([^/]+/[^/]+)/issues", "issue.create"),
    ("POST", r"/repos/([^/]+/[^/]+)/issues/\d+/comments", "issue.comment"),
    ("PUT", r"/repos/([^/]+/[^/]+)/pulls/\d+/merge", "pr.merge"),
    ("POST", r"/repos/([^/]+/[^/]+)/pulls", "pr.create"),
    ("PATCH", r"/repos/([^/]+/[^/]+)/pulls/\d+", "pr.edit"),
    ("POST", r"/login/device/code", "auth.login"),
]


class ForgeAdapter(Adapter):
    """Enough of a forge for the gates: a few REST routes, GET is read."""

    name = "forge"
    default_hosts = ("forge.test",)

    def classify(self, request: Request) -> Classification:
        repo_match = re.match(r"/repos/([^/]+/[^/]+)", request.path)
        repo = repo_match.group(1) if repo_match else None
        if request.method == "GET":
            return Classification(("read",), repo=repo)
        for method, pattern, op in ROUTES:
            m = re.fullmatch(pattern, request.path)
            if m and method == request.method:
                draft = draft_from_json(request) if op == "issue.create" else None
                return Classification((op,), repo=m.group(1) if m.groups() else None,
                                      issues=(draft,) if draft is not None else ())
        return Classification.unknown("no route", repo=repo)


class ForgePlugin:
    @hookimpl
    def register_adapters(self, register: Callable[[Adapter], None]) -> None:
        register(ForgeAdapter())


BASE: dict[str, Any] = {
    "agents": {
        "bot": {"mode": "issues_and_prs"},
        "merger": {"mode": "issues_prs_merge"},
        "scoped": {"mode": "issues_and_prs", "repos": ["team/*"]},
        "low": {"mode": "advisory"},
    },
    "credentials": {"forge": {"token_env": "UNUSED"}},
}


class Harness:
    def __init__(self, extra: Mapping[str, Any] | None = None, now: list[float] | None = None) -> None:
        data = {**BASE, **(extra or {})}
        loaded = plugins.load(entry_points=False, extra=[("forge-plugin", ForgePlugin())])
        self.policy = parse_policy(data, adapters=loaded.adapters)
        self.engine = Engine(self.policy, loaded)
        self.store = MemoryStore()
        self.now = now if now is not None else [1000.0]
        canaries = {self.store.canary(name): name for name in self.policy.model.agents}
        self.gates = ProxyGates(self.policy, self.store, credentials={"forge": "tok-123"}, canaries=canaries,
                                clock=lambda: self.now[0])
        self.worker = ThreadPoolExecutor(max_workers=1)
        self.last = LastFlags(self)

    def decide(self, agent: str, method: str, path: str, body: Any = b"", internal: bool = False,
               judged: bool = False) -> Decision:
        """The engine's decision, its needs answered by the gates; ``judged``: as the proxy
        makes it (:meth:`as_the_proxy`)."""
        raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
        request = Request.from_url(method, f"https://forge.test{path}", body=raw)
        grant = self.policy.grant_for(agent)
        assert grant is not None or internal
        caller = Caller(agent, internal=True) if internal else Caller(agent, grant)  # type: ignore[arg-type]
        if judged:
            return self.as_the_proxy(request, caller)
        return self.engine.decide(request, caller, self.gates)

    def as_the_proxy(self, request: Request, caller: Caller) -> Decision:
        """As the enforcement addon decides: on an event loop, each need answered by
        :class:`~gitvow_proxy.answers.Answers` (the store on its one worker thread), the flags
        read last kept between decisions; what a decision leaves for the worker is done when
        this returns."""

        async def judged() -> Decision:
            answers = Answers(self.engine, self.gates, request, self.worker, self.last, lambda: None)
            return await drive(self.engine.judge(request, caller, self.gates), answers)

        decision = asyncio.run(judged())
        self.worker.submit(lambda: None).result()
        return decision


class CountingStore(MemoryStore):
    """A memory store that counts the calls the gates make: each is a round trip on a shared store."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def take(self, *args: Any, **kwargs: Any) -> float | None:
        self.calls.append("take")
        return super().take(*args, **kwargs)

    def admit(self, *args: Any, **kwargs: Any) -> Admission:
        self.calls.append("admit")
        return super().admit(*args, **kwargs)

    def flags(self, kind: str) -> frozenset[str]:
        self.calls.append("flags")
        return super().flags(kind)

    def all_flags(self) -> dict[str, frozenset[str]]:
        self.calls.append("all_flags")
        return super().all_flags()


def counting(extra: Mapping[str, Any]) -> tuple[Harness, CountingStore]:
    h = Harness(extra)
    store = CountingStore()
    h.store = store
    h.gates = ProxyGates(h.policy, store, credentials={"forge": "tok-123"}, canaries={}, clock=lambda: h.now[0])
    return h, store


def test_a_budgeted_write_reaches_the_store_once() -> None:
    """The proxy decides a budgeted write on the flags read last; the budget's admission confirms
    them as it takes: one round trip per write, once the flags were read."""
    h, store = counting({"budget": {"window_seconds": 60, "writes": 10}})
    for i in range(3):
        assert h.decide("bot", "POST", f"/repos/team/app/issues/{i}/comments", {}, judged=True).action is Action.FORWARD
    assert store.calls == ["all_flags", "take", "admit", "admit"]  # the first reads the flags
    assert store.usage("budget:bot:writes", h.now[0], 60) == 3
    store.calls.clear()
    assert h.decide("bot", "GET", "/repos/team/app", judged=True).action is Action.FORWARD
    assert store.calls == []  # reads never reach the store
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 3}


def test_a_pause_stops_the_next_budgeted_write_at_once() -> None:
    """Flags changed since they were read: the admission takes nothing and the run-state gate
    judges the write on the store's flags, so a pause is never missed, and the write counted once;
    a refusal on flags read last is confirmed on flags read afresh."""
    h, store = counting({"budget": {"window_seconds": 60, "writes": 10}})
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {}, judged=True).action is Action.FORWARD
    store.set_flag(PAUSED, "team/app", True)
    store.calls.clear()
    assert reason(h.decide("bot", "POST", "/repos/team/app/issues/2/comments", {}, judged=True)) == "repo_paused"
    assert store.calls == ["admit"]  # the admission's answer carries the flags: no second round trip
    assert store.usage("budget:bot:writes", h.now[0], 60) == 1
    assert reason(h.decide("bot", "POST", "/repos/team/lib/issues/2/comments", {}, judged=True)) is None
    store.set_flag(PAUSED, "team/app", False)
    assert h.decide("bot", "POST", "/repos/team/app/issues/3/comments", {}, judged=True).action is Action.FORWARD
    assert store.usage("budget:bot:writes", h.now[0], 60) == 3
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 3, ("bot", "issue.comment", "refused"): 1}


def test_a_refusal_by_a_later_stage_reads_the_flags_afresh_behind_it() -> None:
    """A write refused by a later stage never reached an admission to confirm the flags read
    last: it is refused either way, and the flags are read afresh behind it for the next."""
    h, store = counting({"budget": {"window_seconds": 60, "writes": 10}})
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {}, judged=True).action is Action.FORWARD
    store.calls.clear()
    assert reason(h.decide("low", "POST", "/repos/team/app/issues/1/comments", {}, judged=True)) == "mode_denied"
    assert store.calls == ["all_flags"]  # behind the decision
    store.set_flag(PAUSED, "team/app", True)
    assert reason(h.decide("low", "POST", "/repos/team/app/issues/1/comments", {}, judged=True)) == "mode_denied"
    assert reason(h.decide("low", "POST", "/repos/team/app/issues/1/comments", {}, judged=True)) == "repo_paused"
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 1, ("low", "issue.comment", "refused"): 3}


def test_a_budgeted_write_carries_what_it_took_and_is_counted_once() -> None:
    """The decision carries the units the write took (for a refund if the forge does not
    perform it); nothing else remembers them."""
    h, store = counting({"budget": {"window_seconds": 60, "writes": 10}})
    for i in range(1, 4):
        decision = h.decide("bot", "POST", f"/repos/team/app/issues/{i}/comments", {}, judged=True)
        assert decision.action is Action.FORWARD
        assert decision.taken is not None and decision.taken.keys == ("budget:bot:writes",)
        assert decision.taken.amounts == (1,)
    assert store.calls == ["all_flags", "take", "admit", "admit"]
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 3}
    assert h.decide("bot", "GET", "/repos/team/app", judged=True).taken is None


def test_a_write_without_room_is_throttled_on_the_admissions_answer() -> None:
    """No room: the admission takes nothing and says how long to wait; counted throttled (never allowed)."""
    h, store = counting({"budget": {"window_seconds": 60, "agents": {"bot": {"writes": 2}}}})
    for i in range(2):
        assert h.decide("bot", "POST", f"/repos/team/app/issues/{i}/comments", {}, judged=True).action is Action.FORWARD
    store.calls.clear()
    throttled = h.decide("bot", "POST", "/repos/team/app/issues/9/comments", {}, judged=True)
    assert throttled.action is Action.THROTTLE and throttled.reason == "write_budget" and throttled.taken is None
    assert store.calls == ["admit"]
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 2, ("bot", "issue.comment", "throttled"): 1}


def test_what_has_no_budget_reads_the_flags_and_reads_never_reach_the_store() -> None:
    h, store = counting({})
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {}, judged=True).action is Action.FORWARD
    assert store.calls == ["all_flags"]
    store.calls.clear()
    assert h.decide("bot", "GET", "/repos/team/app", judged=True).action is Action.FORWARD
    assert store.calls == []
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 1}


def reason(decision: Decision) -> str | None:
    return decision.reason if decision.action is not Action.FORWARD else None


def test_allowed_write_is_forwarded_with_credentials() -> None:
    h = Harness()
    d = h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {"body": "hi"})
    assert d.action is Action.FORWARD
    assert d.headers == {"authorization": "Bearer tok-123"}


def test_run_state_order_paused_before_scope_before_policy() -> None:
    h = Harness({"run_state": {"paused": ["other/app", "team/app"], "auto_merge_off": ["team/app"]}})
    # paused wins over scope, auto-merge and the relay of pr.merge
    assert reason(h.decide("scoped", "PUT", "/repos/other/app/pulls/1/merge")) == "repo_paused"
    assert reason(h.decide("bot", "POST", "/repos/team/app/pulls")) == "repo_paused"
    h2 = Harness({"run_state": {"auto_merge_off": ["team/app"]}})
    assert reason(h2.decide("scoped", "PUT", "/repos/other/app/pulls/1/merge")) == "agent_repo_scope"
    assert reason(h2.decide("merger", "PUT", "/repos/team/app/pulls/1/merge")) == "repo_auto_merge_disabled"
    assert reason(h2.decide("merger", "PUT", "/repos/team/lib/pulls/1/merge")) == "hard_deny"


def test_paused_at_run_time_through_the_store() -> None:
    h = Harness()
    assert h.decide("bot", "POST", "/repos/team/app/issues", {"title": "t"}).action is Action.FORWARD
    h.store.set_flag(PAUSED, "Team/App", True)
    assert reason(h.decide("bot", "POST", "/repos/team/app/issues", {"title": "t"})) == "repo_paused"
    assert h.decide("bot", "GET", "/repos/team/app/issues").action is Action.FORWARD


def test_scope_reads_and_unknown_repo_writes() -> None:
    h = Harness()
    assert reason(h.decide("scoped", "GET", "/repos/other/app")) == "agent_repo_scope"
    assert h.decide("scoped", "GET", "/user").action is Action.FORWARD
    assert h.decide("scoped", "POST", "/login/device/code").action is Action.FORWARD  # not a write


def test_write_surface_lanes_and_exemptions() -> None:
    lanes = {"write_surface": {"lanes": {"talk": ["issue.*"]}, "agents": {"bot": "talk"}}}
    h = Harness(lanes)
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {"body": "x"}).action is Action.FORWARD
    assert reason(h.decide("bot", "PATCH", "/repos/team/app/pulls/1")) == "write_surface_enforce"
    # the write surface comes before policy: a relayed pr.create reports the lane
    assert reason(h.decide("bot", "POST", "/repos/team/app/pulls")) == "write_surface_enforce"
    assert h.decide("bot", "POST", "/login/device/code").action is Action.FORWARD
    audit_only = Harness({"write_surface": {**lanes["write_surface"], "enforce": False}})
    noted = audit_only.decide("bot", "PATCH", "/repos/team/app/pulls/1")
    assert noted.action is Action.FORWARD and "would refuse" in (noted.note or "")


def test_allowed_repo_filter_after_policy() -> None:
    h = Harness({"proxy": {"allowed_repos": ["team/*"]}})
    assert reason(h.decide("bot", "GET", "/repos/elsewhere/x")) == "repo_not_in_config"
    assert reason(h.decide("low", "POST", "/repos/elsewhere/x/issues/1/comments", {})) == "mode_denied"


def test_issue_shape() -> None:
    h = Harness({"issue_shape": {"title_max": 20, "body_min": 10, "required_sections": ["## Why"]}})
    good = {"title": "Short title", "body": "## Why\nbecause it breaks"}
    assert h.decide("bot", "POST", "/repos/team/app/issues", good).action is Action.FORWARD
    for bad in ({"title": "x" * 21, "body": good["body"]}, {"title": "ok", "body": "## Why"},
                {"title": "ok", "body": "long enough but no section"}, {"body": good["body"]}):
        assert reason(h.decide("bot", "POST", "/repos/team/app/issues", bad)) == "issue_shape", bad
    assert reason(h.decide("bot", "POST", "/repos/team/app/issues", b"{not json")) == "issue_shape"
    # The adapter's drafts are what is judged: a title nested in another object is not the issue's.
    decoy = {"meta": {"title": "Short title", "body": good["body"]}, "title": "x" * 21}
    assert reason(h.decide("bot", "POST", "/repos/team/app/issues", decoy)) == "issue_shape"


def test_canary_in_body_path_and_query() -> None:
    h = Harness()
    token = h.store.canary("bot")
    assert reason(h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {"body": f"x {token}"})) == "canary_egress"
    assert reason(h.decide("bot", "GET", f"/repos/team/app/issues?q={token}")) == "canary_egress"
    # another agent's canary is refused just the same
    assert reason(h.decide("merger", "POST", "/repos/team/app/issues/1/comments", {"body": token})) == "canary_egress"
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {"body": "gvc_ but not a token"}).action is Action.FORWARD


def test_a_clean_scan_remembered_never_hides_a_canary() -> None:
    """The body stage remembers texts it found clean: the same text is refused once a scanner
    with a new token is in place (replay sets one), a text carrying a canary is refused each
    time, and a compressed body is judged with its encoding, not as the same bytes sent plain."""
    h = Harness()
    token = h.store.canary("bot")
    path, comment = "/repos/team/app/issues/1/comments", {"body": "a comment wwkkwwkkwwkk"}
    for _ in range(2):
        assert h.decide("bot", "GET", "/repos/team/app/issues?q=zzqqzzqqzzqq").action is Action.FORWARD
        assert h.decide("bot", "POST", path, comment).action is Action.FORWARD
        assert reason(h.decide("bot", "POST", path, {"body": token})) == "canary_egress"
        assert reason(h.decide("bot", "GET", f"/repos/team/app/issues?q={token}")) == "canary_egress"
    from gitvow_proxy.canary import CanaryScanner

    h.gates.scanner = CanaryScanner({"zzqqzzqqzzqq": "bot", "wwkkwwkkwwkk": "bot"}, limit=1 << 20)
    assert reason(h.decide("bot", "GET", "/repos/team/app/issues?q=zzqqzzqqzzqq")) == "canary_egress"
    assert reason(h.decide("bot", "POST", path, comment)) == "canary_egress"
    raw = json.dumps({"body": "clean"}).encode()
    assert h.decide("bot", "POST", path, raw).action is Action.FORWARD
    request = Request.from_url("POST", f"https://forge.test{path}", body=raw, headers={"Content-Encoding": "gzip"})
    decided = h.engine.decide(request, Caller("bot", h.policy.grant_for("bot")), h.gates)  # type: ignore[arg-type]
    assert reason(decided) == "canary_egress"  # not gzip: cannot be read, refused as before


def test_canary_scan_limit_fails_closed() -> None:
    h = Harness({"canary": {"scan_limit": 1024}})
    d = h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {"body": "a" * 2048})
    assert reason(d) == "canary_egress"
    assert d.message is not None and "scan limit" in d.message


def test_budget_sliding_window_and_per_operation_caps() -> None:
    h = Harness({"budget": {"window_seconds": 60, "writes": 3, "operations": {"issue.create": 1}}})
    issue = {"title": "t", "body": "b"}
    assert h.decide("bot", "POST", "/repos/team/app/issues", issue).action is Action.FORWARD
    h.now[0] += 10
    capped = h.decide("bot", "POST", "/repos/team/app/issues", issue)
    assert capped.action is Action.THROTTLE and capped.status == 429
    assert capped.headers["Retry-After"] == "50"
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {}).action is Action.FORWARD
    assert h.decide("bot", "POST", "/repos/team/app/issues/2/comments", {}).action is Action.FORWARD
    h.now[0] += 1
    full = h.decide("bot", "POST", "/repos/team/app/issues/3/comments", {})
    assert full.action is Action.THROTTLE and full.headers["Retry-After"] == "49"
    assert h.decide("bot", "GET", "/repos/team/app").action is Action.FORWARD  # reads are never budgeted
    assert h.decide("merger", "POST", "/repos/team/app/issues/1/comments", {}).action is Action.FORWARD  # per agent
    h.now[0] += 50
    assert h.decide("bot", "POST", "/repos/team/app/issues/4/comments", {}).action is Action.FORWARD


def test_counters_count_writes_allowed_and_refused() -> None:
    h = Harness()
    h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {})
    h.decide("low", "POST", "/repos/team/app/issues/1/comments", {})
    h.decide("bot", "GET", "/repos/team/app")
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 1, ("low", "issue.comment", "refused"): 1}
    assert h.store.counters() == {}  # counted in the process: no store round trip per write


def test_a_throttled_write_is_counted_throttled_not_allowed() -> None:
    h = Harness({"budget": {"window_seconds": 60, "agents": {"bot": {"writes": 1}}}})
    assert h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {}).action is Action.FORWARD
    assert h.decide("bot", "POST", "/repos/team/app/issues/2/comments", {}).action is Action.THROTTLE
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 1, ("bot", "issue.comment", "throttled"): 1}


def test_internal_caller_skips_agent_gates_but_not_unknown() -> None:
    h = Harness({"run_state": {"paused": ["team/app"]}})
    assert h.decide("control-plane", "PUT", "/repos/team/app/pulls/1/merge", internal=True).action is Action.FORWARD
    assert reason(h.decide("control-plane", "DELETE", "/repos/team/app", internal=True)) == "mode_denied"


def test_a_gate_that_raises_is_a_deny_naming_the_stage(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()

    def boom(ctx: object) -> None:
        raise OSError("disk on fire")

    h.gates.repo_filter = boom  # type: ignore[assignment,method-assign]
    d = h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {})
    assert reason(d) == "internal_error" and d.stage == "repo_filter"
    assert "repo_filter" in caplog.text


def test_a_failing_budget_store_is_a_deny() -> None:
    h = Harness({"budget": {"window_seconds": 60, "agents": {"bot": {"writes": 5}}}})

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("database is locked")

    h.store.take = boom  # type: ignore[method-assign]
    d = h.decide("bot", "POST", "/repos/team/app/issues/1/comments", {})
    assert reason(d) == "internal_error"


# -- every decision is made afresh: nothing one decision passed answers for another ------------

COMMENT = "/repos/team/app/issues/1/comments"


def test_another_agent_operation_or_repository_is_judged_on_its_own() -> None:
    """Two identical writes pass; another agent, operation or repository is refused by its own gate."""
    h = Harness({"proxy": {"allowed_repos": ["team/*"]},
                 "agents": {**BASE["agents"], "twin": {"mode": "issues_and_prs"}},
                 "write_surface": {"lanes": {"talk": ["issue.comment"], "none": ["label.*"]},
                                   "agents": {"bot": "talk", "twin": "none"}}})
    assert h.decide("bot", "POST", COMMENT, {}).action is Action.FORWARD
    assert h.decide("bot", "POST", "/repos/team/app/issues/2/comments", {"body": "other"}).action is Action.FORWARD
    assert reason(h.decide("twin", "POST", COMMENT, {})) == "write_surface_enforce"
    assert reason(h.decide("bot", "PUT", "/repos/team/app/pulls/1/merge")) == "write_surface_enforce"
    assert reason(h.decide("bot", "POST", "/repos/other/app/issues/1/comments", {})) == "repo_not_in_config"
    low = h.policy.grant_for("low")
    assert low is not None
    request = Request.from_url("POST", f"https://forge.test{COMMENT}", body=b"{}")
    assert reason(h.engine.decide(request, Caller("bot", low), h.gates)) == "mode_denied"


def test_a_write_without_a_repository_is_judged_by_its_adapter() -> None:
    """Whether a write without a repository passes the repository filter depends on whether
    its adapter has repositories."""

    class Nameless(Adapter):
        """Writes that name no repository (a forge where that means one was not established)."""

        name = "nameless"
        default_hosts = ("nameless.test",)

        def classify(self, request: Request) -> Classification:
            return Classification(("issue.comment",))

    class Flat(Nameless):
        """The same writes on a forge without repositories (Linear's issues)."""

        name = "flat"
        default_hosts = ("flat.test",)
        has_repositories = False

    class Both:
        @hookimpl
        def register_adapters(self, register: Callable[[Adapter], None]) -> None:
            register(Nameless())
            register(Flat())

    loaded = plugins.load(entry_points=False, extra=[("both", Both())])
    policy = parse_policy({"agents": BASE["agents"], "proxy": {"allowed_repos": ["team/*"]}}, adapters=loaded.adapters)
    engine = Engine(policy, loaded)
    gates = ProxyGates(policy, MemoryStore(), credentials={}, canaries={})
    grant = policy.grant_for("bot")
    assert grant is not None
    caller = Caller("bot", grant)

    def on(host: str) -> Decision:
        return engine.decide(Request.from_url("POST", f"https://{host}/comments"), caller, gates)

    assert on("flat.test").action is Action.FORWARD
    assert reason(on("nameless.test")) == "repo_unresolved"


def test_pauses_bodies_and_budgets_are_judged_on_every_write() -> None:
    """A pause between two identical writes refuses the second, a canary in the body is
    refused, and the budget still throttles."""
    h = Harness({"budget": {"window_seconds": 60, "writes": 3}})
    assert h.decide("bot", "POST", COMMENT, {"body": "hi"}, judged=True).action is Action.FORWARD
    assert h.decide("bot", "POST", COMMENT, {"body": "hi"}, judged=True).action is Action.FORWARD
    h.store.set_flag(PAUSED, "team/app", True)
    assert reason(h.decide("bot", "POST", COMMENT, {"body": "hi"}, judged=True)) == "repo_paused"
    h.store.set_flag(PAUSED, "team/app", False)
    canary = h.store.canary("bot")
    assert reason(h.decide("bot", "POST", COMMENT, {"body": f"leak {canary}"}, judged=True)) == "canary_egress"
    assert h.decide("bot", "POST", COMMENT, {"body": "hi"}, judged=True).action is Action.FORWARD
    throttled = h.decide("bot", "POST", COMMENT, {"body": "hi"}, judged=True)
    assert throttled.action is Action.THROTTLE and throttled.status == 429
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 3, ("bot", "issue.comment", "refused"): 2,
                                    ("bot", "issue.comment", "throttled"): 1}


def test_a_lane_that_only_reports_notes_every_write() -> None:
    """``enforce = false`` leaves a note on each decision."""
    h = Harness({"write_surface": {"lanes": {"talk": ["label.*"]}, "agents": {"bot": "talk"}, "enforce": False}})
    for _ in range(2):
        decision = h.decide("bot", "POST", COMMENT, {})
        assert decision.action is Action.FORWARD
        assert (decision.note or "").startswith("write_surface would refuse")


def test_the_budget_plan_is_per_agent_operation_and_action() -> None:
    """Each agent takes from its own windows and each operation from its own cap, whatever was
    decided before: a plan remembered for one never answers for another."""
    h = Harness({"budget": {"window_seconds": 60, "writes": 1, "operations": {"issue.comment": 1}}})
    assert h.decide("bot", "POST", COMMENT, {}).action is Action.FORWARD
    assert h.decide("merger", "POST", COMMENT, {}).action is Action.FORWARD  # its own window
    assert h.store.usage("budget:merger:writes", h.now[0], 60) == 1
    assert h.store.usage("budget:merger:op:issue.comment", h.now[0], 60) == 1
    h2 = Harness({"budget": {"window_seconds": 60, "operations": {"issue.comment": 1}}})
    assert h2.decide("bot", "POST", COMMENT, {}).action is Action.FORWARD
    assert h2.decide("bot", "POST", "/repos/team/app/issues", {"title": "t"}).action is Action.FORWARD  # no cap
    assert h2.decide("bot", "POST", COMMENT, {}).action is Action.THROTTLE


def test_the_budget_plan_follows_the_method_the_actions_and_the_caller() -> None:
    """A write operation sent without a body is not a write on the wire; two actions take two
    units; an internal caller takes none: each worked out afresh, whatever was planned before."""
    h = Harness({"budget": {"window_seconds": 60, "writes": 10}})
    adapter = h.engine.adapters["forge"]
    grant = h.policy.grant_for("bot")
    assert grant is not None
    bot = Caller("bot", grant)

    def plan(method: str, classification: Classification, caller: Caller = bot) -> tuple[object, ...]:
        found = h.gates._plan(Context(Request.from_url(method, f"https://forge.test{COMMENT}"), adapter,
                                      classification, caller))
        return found.counted, found.keys, found.amounts

    one = Classification(("issue.create",), repo="team/app")
    two = Classification(("issue.create",), repo="team/app", actions=("issue.create", "issue.create"))
    assert plan("POST", one) == (True, (("budget:bot:writes", 10),), (1,))
    assert plan("GET", one) == (False, (), ())
    assert plan("POST", two) == (True, (("budget:bot:writes", 10),), (2,))
    assert plan("POST", one, Caller("bot", internal=True)) == (True, (), ())
    assert plan("POST", one) == (True, (("budget:bot:writes", 10),), (1,))


def test_each_adapter_carries_its_own_credential() -> None:
    """The credential's name is remembered per adapter: another adapter is another token,
    whichever was asked first."""

    class Other(ForgeAdapter):
        name = "other"
        default_hosts = ("other.test",)

    class Both:
        @hookimpl
        def register_adapters(self, register: Callable[[Adapter], None]) -> None:
            register(ForgeAdapter())
            register(Other())

    loaded = plugins.load(entry_points=False, extra=[("both", Both())])
    policy = parse_policy({"agents": BASE["agents"]}, adapters=loaded.adapters)
    engine = Engine(policy, loaded)
    gates = ProxyGates(policy, MemoryStore(), credentials={"forge": "tok-1", "other": "tok-2"}, canaries={})
    grant = policy.grant_for("bot")
    assert grant is not None

    def sent(host: str) -> Mapping[str, str]:
        request = Request.from_url("POST", f"https://{host}{COMMENT}", body=b"{}")
        return engine.decide(request, Caller("bot", grant), gates).headers

    assert sent("forge.test") == {"authorization": "Bearer tok-1"}
    assert sent("other.test") == {"authorization": "Bearer tok-2"}
    assert sent("forge.test") == {"authorization": "Bearer tok-1"}


def test_a_cap_on_an_operation_that_writes_nothing_throttles_it_and_counts_no_write() -> None:
    """``[budget] operations`` caps any operation it names: a model's ``inference.call`` (a
    read here) is throttled over its cap, takes nothing from ``writes`` and is never counted
    as a write; a read the policy does not cap takes nothing."""
    h = Harness({"budget": {"window_seconds": 60, "writes": 1, "agents": {"bot": {"operations": {"read": 2}}}}})
    for _ in range(2):
        decision = h.decide("bot", "GET", "/repos/team/app", judged=True)
        assert decision.action is Action.FORWARD and decision.taken is not None
    throttled = h.decide("bot", "GET", "/repos/team/app", judged=True)
    assert throttled.action is Action.THROTTLE and throttled.status == 429 and throttled.reason == "write_budget"
    assert h.store.usage("budget:bot:op:read", h.now[0], 60) == 2
    assert h.decide("bot", "POST", COMMENT, {}, judged=True).action is Action.FORWARD  # writes: its own window
    assert h.decide("merger", "GET", "/repos/team/app", judged=True).taken is None  # no cap for this agent
    assert dict(h.gates.counts) == {("bot", "issue.comment", "allowed"): 1}
