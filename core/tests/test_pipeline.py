"""The pipeline's order is a contract: reason codes make it observable."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import pytest

from gitvow.adapter import Adapter
from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context, Gates, Throttle
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy, parse_policy
from gitvow.policy.table import PolicyRow, PolicyTable
from gitvow.relay import APPROVAL, RelayTemplate
from gitvow.request import Classification, Request, Target, ToolCall
from gitvow.verdict import Verdict

HOST = "forge.example.test"


class Forge(Adapter):
    name = "forge"
    default_hosts = (HOST,)

    def classify(self, request: Request) -> Classification:
        if request.path == "/boom":
            raise RuntimeError("adapter bug")
        op = {"GET": "read", "POST": "pr.create", "PUT": "issue.create"}.get(request.method, "unknown")
        return Classification((op,), repo="o/r")

    def relay_hints(self, operation: str) -> Sequence[str]:
        return ("forge-cli pr create",) if operation == "pr.create" else ()


class Recording(Gates):
    """Every gate refuses with its own code when asked to, and records the order it ran in."""

    def __init__(self, refuse: set[str] = frozenset(), raise_in: str | None = None, token: str | None = "s3cret") -> None:  # type: ignore[assignment]
        self.refuse = refuse
        self.raise_in = raise_in
        self.token = token
        self.ran: list[str] = []
        self.recorded: list[str] = []

    def _gate(self, stage: str, code: str) -> Verdict | None:
        self.ran.append(stage)
        if stage == self.raise_in:
            raise RuntimeError(f"{stage} broke")
        return Verdict.deny(code, f"{stage} says no") if stage in self.refuse else None

    def run_state(self, ctx: Context) -> Verdict | None:
        return self._gate("run_state", "repo_paused")

    def write_surface(self, ctx: Context) -> Verdict | None:
        return self._gate("write_surface", "write_surface_enforce")

    def repo_filter(self, ctx: Context) -> Verdict | None:
        return self._gate("repo_filter", "repo_not_in_config")

    def body(self, ctx: Context) -> Verdict | None:
        return self._gate("body", "canary_egress")

    def record(self, ctx: Context, outcome: str) -> None:
        self.recorded.append(outcome)

    def budget(self, ctx: Context) -> Throttle | None:
        self.ran.append("budget")
        return Throttle(retry_after=30, why="10 writes an hour") if "budget" in self.refuse else None

    def credential(self, ctx: Context) -> str | None:
        self.ran.append("credential")
        if self.raise_in == "credential":
            raise RuntimeError("vault down")
        return self.token


@pytest.fixture
def engine() -> Engine:
    plugins = Plugins.of(adapters=[Forge()], relays=[APPROVAL])
    return Engine(Policy(), plugins)


def req(method: str, path: str = "/x") -> Request:
    return Request.from_url(method, f"https://{HOST}{path}")


AGENT = Caller("bot", Grant(Mode.ISSUES_AND_PRS))
OPEN_PR = RelayTemplate("open-pr", "open-pr --title T", "opening a pull request")  # an operator's [relays.NAME]


def test_relay_hints_follow_the_operation_not_the_relay_name() -> None:
    """A relay renamed in the policy keeps the adapter's hints: they are keyed by operation."""
    data = {"relays": {"open-it": {"usage": "open-it TITLE", "what": "opening"}},
            "operations": {"pr.create": {"relay": "open-it"}}}
    plugins = Plugins.of(adapters=[Forge()], relays=[APPROVAL])
    renamed = Engine(parse_policy(data, relays=plugins.relays, sections=()), plugins)
    decision = renamed.decide(req("POST"), AGENT, Recording())
    assert decision.message is not None
    assert "use `open-it TITLE`" in decision.message and "forge-cli pr create" in decision.message


def test_unserved_host_is_tunnelled(engine: Engine) -> None:
    assert engine.decide(Request.from_url("POST", "https://elsewhere.test/"), AGENT).action is Action.TUNNEL


def test_allowed_request_is_forwarded_with_the_adapters_credential(engine: Engine) -> None:
    gates = Recording()
    decision = engine.decide(req("PUT"), AGENT, gates)
    assert decision.action is Action.FORWARD
    assert decision.headers == {"authorization": "Bearer s3cret"}
    assert gates.ran == ["run_state", "write_surface", "repo_filter", "body", "budget", "credential"]


def test_run_state_reports_before_the_relay(engine: Engine) -> None:
    """Run state comes before policy: a PR-create on a paused repo reports repo_paused, not hard_deny."""
    decision = engine.decide(req("POST"), AGENT, Recording(refuse={"run_state"}))
    assert (decision.stage, decision.reason, decision.status) == ("run_state", "repo_paused", 403)


def test_policy_runs_after_write_surface_and_before_the_repo_filter() -> None:
    """An operator's relay ([relays.NAME]) stops at the policy stage, with the adapter's hints."""
    policy = Policy(table=PolicyTable({"pr.create": PolicyRow(relay="open-pr")}), relays={"open-pr": OPEN_PR})
    engine = Engine(policy, Plugins.of(adapters=[Forge()], relays=[APPROVAL]))
    assert engine.decide(req("POST"), AGENT, Recording(refuse={"write_surface"})).reason == "write_surface_enforce"
    relay = engine.decide(req("POST"), AGENT, Recording(refuse={"repo_filter", "body"}))
    assert (relay.stage, relay.reason, relay.staged) == ("policy", "hard_deny", False)
    assert relay.message is not None and "use `open-pr --title T`; do not use forge-cli pr create" in relay.message
    assert relay.message.endswith("reason=hard_deny") and relay.headers["X-Gitvow-Reason"] == "hard_deny"


def test_the_approval_relay_stages_only_what_every_later_gate_passes(engine: Engine) -> None:
    """The default relay for pr.create is `approval`: the repo filter and body gates run too,
    so a request they refuse is refused for that reason and never staged for a human."""
    assert engine.decide(req("POST"), AGENT, Recording(refuse={"body"})).reason == "canary_egress"
    gates = Recording()
    staged = engine.decide(req("POST"), AGENT, gates)
    assert (staged.stage, staged.reason, staged.staged, staged.status) == ("policy", "hard_deny", True, 403)
    assert gates.ran == ["run_state", "write_surface", "repo_filter", "body"]  # no budget, no credential
    assert staged.message is not None and "needs a human's approval" in staged.message
    assert "forge-cli" not in staged.message  # sending it is the sanctioned path: no do-not-use hints
    assert staged.verdict is not None
    line = engine.message(staged.verdict, staged.classification, None, "POST /x", approval="7K3F")  # type: ignore[arg-type]
    assert "staged for a human as approval 7K3F" in line and "`gitvow approvals wait 7K3F`" in line
    assert line.endswith("reason=hard_deny")


def test_an_approved_request_skips_the_policy_stage_only(engine: Engine) -> None:
    approved = Caller("bot", Grant(Mode.ISSUES_AND_PRS), approved=True)
    gates = Recording()
    decision = engine.decide(req("POST"), approved, gates)
    assert decision.action is Action.FORWARD and decision.headers == {"authorization": "Bearer s3cret"}
    assert gates.ran == ["run_state", "write_surface", "repo_filter", "body", "budget", "credential"]
    assert engine.decide(req("POST"), approved, Recording(refuse={"run_state"})).reason == "repo_paused"
    assert engine.decide(req("POST"), approved, Recording(refuse={"budget"})).status == 429


def test_a_request_mixing_a_staged_and_a_denied_operation_is_never_staged() -> None:
    class Mixed(Forge):
        def classify(self, request: Request) -> Classification:
            return Classification(("pr.create", "repo.delete"), repo="o/r")

    engine = Engine(Policy(), Plugins.of(adapters=[Mixed()], relays=[APPROVAL]))
    decision = engine.decide(req("POST"), AGENT, Recording())
    assert (decision.reason, decision.staged) == ("mode_denied", False)
    assert decision.message is not None and "repo.delete" in decision.message and "no agent mode allows it" in decision.message


class TwoRepos(Forge):
    """A merge of one repository's pull request and a comment on another's, in one request
    (a GraphQL document can carry both)."""

    def classify(self, request: Request) -> Classification:
        if request.path == "/opaque":  # the comment's repository is only an opaque id
            return Classification(("pr.merge", "issue.comment"), repos=("team/app",),
                                  targets=(Target("node", "I_kw"),))
        return Classification(("pr.merge", "issue.comment"), repos=("team/app", "team/locked"))


def test_an_approval_never_covers_what_the_policy_stage_refuses_for_another_repository() -> None:
    """Per-repository autonomy: the merge on team/app is the approval relay, the comment on
    team/locked is below the agent's mode there. Judged per repository as the policy stage
    judges it, the request is refused for the comment, never staged for a human."""
    engine = Engine(Policy(), Plugins.of(adapters=[TwoRepos()], relays=[APPROVAL]))
    caller = Caller("bot", Grant(Mode.ISSUES_PRS_MERGE, autonomy=MappingProxyType({"team/locked": Mode.ADVISORY})))
    decision = engine.decide(req("POST"), caller, Recording())
    assert (decision.stage, decision.reason, decision.staged) == ("policy", "mode_denied", False)
    assert decision.message is not None and "issue.comment needs mode issues_only" in decision.message
    # the same request on repositories where the agent's mode stands is staged
    free = Caller("bot", Grant(Mode.ISSUES_PRS_MERGE, autonomy=MappingProxyType({"team/other": Mode.ADVISORY})))
    assert engine.decide(req("POST"), free, Recording()).staged is True
    # a repository not established counts as well: the autonomy could lower it
    unresolved = engine.decide(req("POST", "/opaque"), caller, Recording())
    assert (unresolved.reason, unresolved.staged) == ("repo_unresolved", False)


def test_a_tool_call_is_judged_by_the_same_loop() -> None:
    engine = Engine(Policy(), Plugins.of(adapters=[TwoRepos()], relays=[APPROVAL]))
    adapter = engine.adapters["forge"]
    merge = ToolCall(("pr.merge",), repo="team/app", summary="forge-cli pr merge 3")
    staged = engine.decide_call(merge, adapter, AGENT)
    assert (staged.action, staged.reason, staged.staged) == (Action.DENY, "hard_deny", True)
    assert staged.message is not None and staged.message.startswith("gitvow refused pr.merge")
    read = engine.decide_call(ToolCall(("read",), repo="team/app"), adapter, AGENT)
    assert read.action is Action.FORWARD and read.headers == {}
    both = engine.decide_call(ToolCall(("pr.merge", "repo.delete"), repo="team/app"), adapter, AGENT, target="x")
    assert (both.reason, both.staged) == ("mode_denied", False)


def test_first_refusal_is_recorded_and_stops_the_stages(engine: Engine) -> None:
    gates = Recording(refuse={"repo_filter", "body"})
    decision = engine.decide(req("PUT"), AGENT, gates)
    assert decision.reason == "repo_not_in_config"
    assert gates.ran == ["run_state", "write_surface", "repo_filter"]
    assert gates.recorded == ["refused"]  # counted once, with the final outcome


def test_budget_is_a_429_with_retry_after(engine: Engine) -> None:
    decision = engine.decide(req("PUT"), AGENT, Recording(refuse={"budget"}))
    assert decision.action is Action.THROTTLE and decision.status == 429
    assert decision.headers["Retry-After"] == "30"
    assert decision.message is not None and "wait 30s: the window frees at " in decision.message


def test_internal_caller_skips_the_agent_gates_but_not_the_body_gates(engine: Engine) -> None:
    internal = Caller("control-plane", Grant(Mode.ADVISORY), internal=True)
    gates = Recording(refuse={"run_state"})
    assert engine.decide(req("POST"), internal, gates).action is Action.FORWARD
    assert gates.ran == ["body", "credential"]
    assert engine.decide(req("POST"), internal, Recording(refuse={"body"})).reason == "canary_egress"


def test_internal_caller_still_cannot_send_what_no_adapter_understands(engine: Engine) -> None:
    internal = Caller("control-plane", internal=True)
    assert engine.decide(req("BREW"), internal, Recording()).reason == "mode_denied"


@pytest.mark.parametrize("stage", ["run_state", "write_surface", "repo_filter", "body", "credential"])
def test_an_exception_in_any_stage_is_a_deny_never_a_forward(engine: Engine, stage: str) -> None:
    decision = engine.decide(req("PUT"), AGENT, Recording(raise_in=stage))
    assert decision.action is Action.DENY and decision.reason == "internal_error"
    assert decision.message is not None and stage in decision.message
    assert "broke" not in decision.message and "vault" not in decision.message


def test_an_adapter_that_raises_is_a_deny_naming_it(engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    decision = engine.decide(req("POST", "/boom"), AGENT, Recording())
    assert decision.action is Action.DENY and decision.reason == "internal_error"
    assert "adapter 'forge' failed" in (decision.message or "")
    assert "forge" in caplog.text and "adapter bug" in caplog.text


def test_no_credential_means_no_authorization_header(engine: Engine) -> None:
    assert engine.decide(req("PUT"), AGENT, Recording(token=None)).headers == {}


def test_decide_classified_runs_the_stages_on_a_given_classification(engine: Engine) -> None:
    """Replay of an audit line: the logged operations decide, not the adapter's reading."""
    adapter = engine.hosts.lookup(HOST)
    assert adapter is not None
    gates = Recording()
    # A GET the adapter would read as `read`, logged as a PR creation: the relay answers.
    decision = engine.decide_classified(req("GET"), adapter, Classification(("pr.create",), repo="o/r"), AGENT, gates)
    assert (decision.stage, decision.reason, decision.adapter, decision.staged) == ("policy", "hard_deny", "forge", True)
    assert gates.ran == ["run_state", "write_surface", "repo_filter", "body"]  # the approval relay runs the later gates
    allowed = engine.decide_classified(req("GET"), adapter, Classification(("issue.create",), repo="o/r"), AGENT, Recording())
    assert allowed.action is Action.FORWARD and allowed.classification is not None
    assert allowed.classification.operations == ("issue.create",)


class Writes(Adapter):
    """A forge whose branch API forgets its change (``DELETE /branches/x`` carries one)."""

    name = "writes"
    default_hosts = (HOST,)

    def classify(self, request: Request) -> Classification:
        from gitvow.change import DELETED, Change, RefChange

        if request.method == "DELETE":
            change = Change(refs=(RefChange("refs/heads/x", "", "", DELETED),))
            return Classification(("ref.write", "ref.delete"), repo="o/r", change=change)
        if request.method == "PUT":
            return Classification(("contents.write",), repo="o/r")
        if request.method == "PATCH":
            return Classification(("pr.edit",), repo="o/r")  # a title: it moves no ref
        return Classification(("ref.write",), repo="o/r")


WRITER = Caller("bot", Grant(Mode.ISSUES_PRS_MERGE))


def writes_engine(**table: PolicyRow) -> Engine:
    rows = {"contents.write": PolicyRow(min_mode=Mode.ISSUES_AND_PRS), "ref.delete": PolicyRow(min_mode=Mode.ADVISORY),
            **table}
    return Engine(Policy(table=PolicyTable(rows)), Plugins.of(adapters=[Writes()], relays=[APPROVAL]))


def test_a_write_without_a_change_is_refused_before_any_change_rule() -> None:
    engine = writes_engine()
    for method, operation in (("POST", "ref.write"), ("PUT", "contents.write")):
        decision = engine.decide(req(method), WRITER, Recording())
        assert (decision.action, decision.stage, decision.reason) == (Action.DENY, "change", "change_unestablished")
        assert decision.message == (
            f"gitvow refused {operation} on o/r ({method} /x): {operation} moves a ref or changes content, but "
            "adapter 'writes' established no change for it (the refs it moves and the paths it writes are missing); "
            "use a route or tool whose change gitvow reads. reason=change_unestablished")
    # a write that says what it changes goes on to the rules; one of another operation needs none
    assert engine.decide(req("DELETE"), WRITER, Recording()).action is Action.FORWARD
    assert engine.decide(req("PATCH"), WRITER, Recording()).action is Action.FORWARD


def test_a_tool_call_without_a_change_is_refused_unless_the_proxy_reads_it() -> None:
    engine = writes_engine()
    adapter = engine.adapters["writes"]
    push = ToolCall(("ref.write",), repo="o/r", summary="forge push_files")
    whole = engine.decide_call(push, adapter, WRITER)  # an MCP tool: its arguments are the request
    assert (whole.reason, whole.stage) == ("change_unestablished", "change")
    assert whole.message is not None and whole.message.startswith("gitvow refused ref.write on o/r (forge push_files)")
    # a shell command whose body is elsewhere: the proxy reads the request, as for what else it cannot show
    assert engine.decide_call(push, adapter, WRITER, partial=True).action is Action.FORWARD


def test_an_mcp_batch_is_refused_when_one_of_its_writes_carries_no_change() -> None:
    from gitvow.adapters.mcp import McpAdapter, McpEndpoint
    from gitvow.change import Change, RefChange
    from gitvow.jsonrpc import read_body

    class Tools(Writes):
        def classify_mcp_tool(self, tool: str, arguments: object) -> ToolCall | None:
            change = Change(refs=(RefChange("refs/heads/b", "", "", "created"),)) if tool.endswith("create_branch") \
                else None
            return ToolCall(("ref.write",), repo="o/r", change=change)

    adapter = McpAdapter(McpEndpoint.parse("m", "https://mcp.example.test/mcp", "writes"), Tools())
    call = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": {}}}'
    one = adapter.classify_messages(read_body(call % (1, b"create_branch"))[0])
    assert one.change is not None and one.change.refs[0].ref == "refs/heads/b"
    batch = adapter.classify_messages(read_body(b"[" + call % (1, b"create_branch") + b", "
                                                + call % (2, b"push_files") + b"]")[0])
    assert batch.operations == ("ref.write",) and batch.change is None  # refused whole by the change stage
