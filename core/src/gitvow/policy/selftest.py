"""``[[tests]]``: examples a policy file carries of what it must allow and refuse.

A policy that says what it means can be changed without fear: each test names a request (or
an agent's tool call), the agent, and the verdict and reason it must get. They run wherever a
policy is loaded to be enforced: ``gitvow policy check``, proxy start and every reload. A
failing test refuses the file by naming the test, so a reload keeps the last good policy.

Requests are judged as ``gitvow explain`` judges them: classification and the policy stage,
with the agent's mode, capabilities and per-repository autonomy; live state (pauses, budgets)
is not part of a test. Tool calls (``command``, ``path``, ``mcp``) are judged by the agent
gate, through the ``tool_tests`` of the section it registers; where the gate is not installed
``gitvow policy check`` says so and the proxy, which never sees tool calls, leaves them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from gitvow.pipeline import Engine
    from gitvow.plugins import Plugins
    from gitvow.policy.load import Policy

Expect = Literal["allow", "deny", "relay", "confirm"]

#: What to do with tool-call tests where no installed section judges tool calls.
ToolCalls = Literal["error", "skip"]


class PolicyTest(BaseModel):
    """One ``[[tests]]`` entry: exactly one of a request (``method`` + ``url``), ``command``,
    ``path`` (a file the agent edits) or ``mcp`` (an MCP tool name, with ``arguments``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    agent: str | None = None
    method: str | None = None
    url: str | None = None
    body: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    command: str | None = None
    path: str | None = None
    mcp: str | None = None
    arguments: dict[str, object] = Field(default_factory=dict)
    tool: str = "Edit"
    #: ``deny`` is met by any refusal (a relay is one); ``relay`` only by a relay.
    expect: Expect
    reason: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> PolicyTest:
        kinds = [kind for kind, present in (("method+url", self.method is not None or self.url is not None),
                                            ("command", self.command is not None), ("path", self.path is not None),
                                            ("mcp", self.mcp is not None)) if present]
        if len(kinds) != 1:
            raise ValueError(f"expected exactly one of method+url, command, path or mcp; got {', '.join(kinds) or 'none'}")
        if kinds == ["method+url"] and (self.method is None or self.url is None):
            raise ValueError("a request test needs both method and url")
        if self.expect == "confirm" and self.is_request:
            raise ValueError("only the agent gate asks to confirm: a request test expects allow, deny or relay")
        return self

    @property
    def is_request(self) -> bool:
        return self.method is not None

    def label(self, index: int) -> str:
        return f"tests[{index}]" + (f" ({self.name})" if self.name else "")


def meets(test: PolicyTest, verdict: str, reason: str | None) -> bool:
    """Whether a judged ``verdict`` (allow, deny, relay, confirm) and ``reason`` meet ``test``."""
    ok = verdict in ("deny", "relay") if test.expect == "deny" else verdict == test.expect
    return ok and (test.reason is None or test.reason == reason)


def judge_request(engine: Engine, test: PolicyTest) -> tuple[str, str | None]:
    """The verdict and reason ``gitvow explain`` gives the test's request."""
    from gitvow.evaluator import Grant
    from gitvow.gates import Caller
    from gitvow.pipeline import Action
    from gitvow.request import Request

    if test.method is None or test.url is None:
        raise RuntimeError("internal error: test.method or test.url unset")
    request = Request.from_url(test.method, test.url, headers=test.headers, body=test.body.encode())
    grant = (engine.policy.grant_for(test.agent) if test.agent else None) or Grant()
    decision = engine.decide(request, Caller("policy-test", grant))
    if decision.action is Action.TUNNEL:
        return "allow", None
    verdict = decision.verdict.outcome.label if decision.verdict is not None else "allow"
    return verdict, decision.reason


def failures(policy: Policy, plugins: Plugins, *, tool_calls: ToolCalls = "error") -> list[str]:
    """One line per failing test of ``policy``: ``tests[i] (name): expected X, got Y``."""
    from gitvow.pipeline import Engine

    tests: list[PolicyTest] = list(getattr(policy.model, "tests", ()))
    if not tests:
        return []
    problems: list[str] = []
    for index, test in enumerate(tests):
        if test.agent is not None and test.agent not in policy.model.agents:
            problems.append(f"{test.label(index)}.agent: {test.agent!r} is not in [agents]")
    if problems:
        return problems
    engine = Engine(policy, plugins)
    judges = [section.tool_tests for section in plugins.sections if section.tool_tests is not None]
    for index, test in enumerate(tests):
        if test.is_request:
            try:
                verdict, reason = judge_request(engine, test)
            except ValueError as exc:
                problems.append(f"{test.label(index)}.url: {exc}")
                continue
        elif judges:
            try:
                verdict, reason = judges[0](policy, test)
            except Exception as exc:  # a judge that breaks fails the test, by name, never the load
                problems.append(f"{test.label(index)}: could not be judged: {type(exc).__name__}: {exc}")
                continue
        elif tool_calls == "error":
            problems.append(f"{test.label(index)}: a tool-call test is judged by gitvow-gate, which is not "
                            'installed; pip install "gitvow-gate>=1"')
            continue
        else:
            continue
        if not meets(test, verdict, reason):
            want = test.expect + (f" reason={test.reason}" if test.reason else "")
            got = verdict + (f" reason={reason}" if reason else "")
            problems.append(f"{test.label(index)}: expected {want}, got {got}")
    return problems
