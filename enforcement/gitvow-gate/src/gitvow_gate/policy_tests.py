"""The agent gate's judge of ``[[tests]]`` tool calls: exactly what its hook would decide.

``gitvow policy check`` asks it for every test that names a ``command``, a ``path`` or an
``mcp`` tool (:mod:`gitvow.policy.selftest`). The call is judged by :func:`decide` under the
file's own gate policy, in the file's directory, as the agent the test names: rules first,
then forge operations, then providers. The reason code a forge refusal carries is its
``reason=`` ending; the approval relay's ``hard_deny`` reads as ``relay``.
"""

from __future__ import annotations

import os
import re

from gitvow.policy.load import Policy
from gitvow.policy.selftest import PolicyTest
from gitvow_gate import gate_policy
from gitvow_gate.call import FileEdit, GateCall
from gitvow_gate.decide import ALLOW, decide

_REASON = re.compile(r"reason=([a-z_]+)\W*$")
_RELAY_CODE = "hard_deny"


def judge_tool_test(policy: Policy, test: PolicyTest) -> tuple[str, str | None]:
    """``(verdict, reason code)`` of the tool call ``test`` names: allow, confirm, deny or relay."""
    source = policy.source or os.getcwd()
    cwd = os.path.dirname(os.path.abspath(source)) if policy.source else source
    if test.command is not None:
        call = GateCall.shell(test.command, cwd)
    elif test.path is not None:
        target = os.path.join(cwd, test.path)
        call = GateCall("edit", test.tool, cwd, edits=(FileEdit(target),), tool_input={"file_path": target})
    else:
        if test.mcp is None:
            raise RuntimeError("internal error: test.mcp unset")
        call = GateCall.mcp(test.mcp, dict(test.arguments), cwd)
    gate = gate_policy.from_policy(policy, source)
    decision = decide(gate, call, test.agent or "", env={})
    if decision.outcome == ALLOW:
        return "allow", None
    found = _REASON.search(decision.reason)
    code = found.group(1) if found else None
    verdict = "relay" if code == _RELAY_CODE else decision.outcome
    return verdict, code
