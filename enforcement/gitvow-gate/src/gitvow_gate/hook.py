"""``gitvow hook``: one agent hook invocation, from stdin JSON to the agent's answer.

It never crashes and never answers by accident: an unreadable payload, a policy that cannot
be loaded or any exception in the decision path becomes a refusal that says what went wrong,
in the agent's own format, and a refusal that cannot even be rendered is exit 2 on stderr.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from gitvow_gate.agents.base import AgentAdapter, HookAnswer
from gitvow_gate.decide import DENY, GateDecision, decide, strictest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _blocked(adapter: AgentAdapter | None, reason: str, payload: Mapping[str, Any]) -> HookAnswer:
    decision = GateDecision(DENY, reason, "hook")
    if adapter is not None:
        try:
            return adapter.render(decision, payload)
        except Exception:
            pass
    return HookAnswer(2, stderr=decision.message())


def run(agent: str, event: str, stdin: str, env: Mapping[str, str] | None = None) -> HookAnswer:
    env = os.environ if env is None else env
    adapter: AgentAdapter | None = None
    payload: Mapping[str, Any] = {}
    try:
        from gitvow_gate import agents

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
        from gitvow.errors import PolicyError
        from gitvow_gate import policy as gate_policy

        cwd = calls[0].cwd or os.getcwd()
        policies: dict[str, gate_policy.GatePolicy] = {}
        decisions = []
        for call in calls:
            # An edit is judged by the policy of the repository the file is in, as gitvow 0.42
            # did: a session opened in one checkout may edit another.
            where = cwd
            if call.edits:
                from gitvow_gate.paths import repo_of

                where = repo_of(call)
            try:
                policy = policies.get(where) or gate_policy.load(where, env=env)
            except PolicyError as exc:
                return _blocked(
                    adapter, f"the policy cannot be loaded: {exc}; every tool call is refused until it is fixed",
                    payload,
                )
            policies[where] = policy
            decision = decide(policy, call, agent)
            if decision.blocks and len(calls) > 1 and call.edits:
                decision = GateDecision(decision.outcome, f"{decision.reason} [file: {call.edits[0].path}]",
                                        decision.stage, decision.evidence, decision.observed, decision.operations)
            decisions.append(decision)
            if decision.outcome == DENY:
                break
        final = strictest(decisions)
        if final.observed:
            from gitvow_gate import record

            record.observed(final.observed, agent=agent, tool=calls[0].tool, cwd=cwd, env=env)
        return adapter.render(final, payload)
    except Exception as exc:  # the gate fails closed, with a reason
        return _blocked(adapter, f"gitvow hook failed ({type(exc).__name__}: {str(exc)[:200]})", payload)
