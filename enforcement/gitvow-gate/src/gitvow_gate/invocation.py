"""``gitvow hook``: one agent hook invocation, from stdin JSON to the agent's answer.

It never crashes and never answers by accident: an unreadable payload, a policy that cannot
be loaded or any exception in the decision path becomes a refusal that says what went wrong,
in the agent's own format, and a refusal that cannot even be rendered is exit 2 on stderr.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from gitvow.errors import PolicyError
from gitvow_gate import agents, gate_policy, observations
from gitvow_gate.agents.base import AgentAdapter, HookAnswer
from gitvow_gate.call import GateCall
from gitvow_gate.decide import DENY, GateDecision, decide, strictest
from gitvow_gate.paths import repo_of


def _blocked(adapter: AgentAdapter | None, reason: str, payload: Mapping[str, Any]) -> HookAnswer:
    decision = GateDecision(DENY, reason, "hook")
    if adapter is not None:
        try:
            return adapter.render(decision, payload)
        except Exception:
            pass
    return HookAnswer(2, stderr=decision.message())


def policy_agent(kind: str, env: Mapping[str, str]) -> str:
    """The name the policy knows the agent by, for ``[agents.NAME]`` and the forge stage.

    ``$GITVOW_AGENT`` when set — the proxy identity ``gitvow env --agent NAME`` exports, which
    the agent and its hooks inherit, so the gate judges a call as the proxy will judge its
    traffic — else the agent the hook was installed for (``claude``, ``codex``…). ``gitvow
    check`` resolves it through this same function.
    """
    return env.get("GITVOW_AGENT") or kind


def judge(calls: Sequence[GateCall], agent: str, env: Mapping[str, str]) -> GateDecision:
    """The decision for one tool call's acts, as ``gitvow hook`` and ``gitvow check`` both reach it.

    Each act is judged under the policy of where it happens: the session's directory, or for
    an edit the repository of the edited file (a session opened in one checkout may edit
    another, as gitvow 0.42 allowed). Raises :class:`~gitvow.errors.PolicyError`.
    """
    cwd = (calls[0].cwd or os.getcwd()) if calls else os.getcwd()
    policies: dict[str, gate_policy.GatePolicy] = {}
    decisions: list[GateDecision] = []
    for call in calls:
        where = cwd
        if call.edits:
            where = repo_of(call)
        policy = policies.get(where) or gate_policy.load(where, env=env)
        policies[where] = policy
        decision = decide(policy, call, agent, env)
        if decision.blocks and len(calls) > 1 and call.edits:
            decision = GateDecision(decision.outcome, f"{decision.reason} [file: {call.edits[0].path}]",
                                    decision.stage, decision.evidence, decision.observed, decision.operations)
        decisions.append(decision)
        if decision.outcome == DENY:
            break
    return strictest(decisions)


def run(agent: str, event: str, stdin: str, env: Mapping[str, str] | None = None) -> HookAnswer:
    env = os.environ if env is None else env
    adapter: AgentAdapter | None = None
    payload: Mapping[str, Any] = {}
    try:
        adapter = agents.get(agent)
        try:
            data = json.loads(stdin) if stdin.strip() else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return _blocked(adapter, "the hook input is not a JSON object; the call cannot be judged", payload)
        payload = data
        calls = adapter.normalize(event, payload)
        if calls is None or not calls:
            return adapter.allow(payload)
        cwd = calls[0].cwd or os.getcwd()
        try:
            final = judge(calls, policy_agent(agent, env), env)
        except PolicyError as exc:
            return _blocked(
                adapter, f"the policy cannot be loaded: {exc}; every tool call is refused until it is fixed", payload,
            )
        if final.observed:
            observations.observed(final.observed, agent=agent, tool=calls[0].tool, cwd=cwd, env=env)
        return adapter.render(final, payload)
    except Exception as exc:  # the gate fails closed, with a reason
        return _blocked(adapter, f"gitvow hook failed ({type(exc).__name__}: {str(exc)[:200]})", payload)


def answer(agent: str, event: str, stdin: bytes, env: Mapping[str, str]) -> tuple[int, bytes, bytes]:
    """:func:`run` on the payload as the hook process read it: its exit status and the bytes it prints.

    The one decision both the gate server and an in-process hook call make
    (:mod:`gitvow_gate.hook_client`); a payload that is not UTF-8 is an unreadable one.
    """
    try:
        text = stdin.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    result = run(agent, event, text, env)
    out = (result.stdout + "\n").encode("utf-8", "replace") if result.stdout else b""
    err = (result.stderr + "\n").encode("utf-8", "replace") if result.stderr else b""
    return result.code, out, err
