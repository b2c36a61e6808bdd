"""An MCP tool call gets one verdict at both enforcement points.

The agent gate sees ``mcp__github__merge_pull_request`` with its arguments before the agent
calls it; the proxy sees the ``tools/call`` the MCP client then POSTs to GitHub's hosted
server. Both classify with the GitHub adapter's one tool table and judge with one policy, so
for each call below the installed hook (a subprocess, with Claude Code's JSON) and the
proxy's pipeline (``Engine.decide`` on the wire request, the built-in ``[mcp.github]``
endpoint) must agree: both allow, or both refuse with the same reason code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitvow.gates import Caller
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import load_policy
from gitvow.request import Request

from .conftest import Hooked

pytestmark = pytest.mark.skipif("github" not in installed().adapters,
                                reason="the GitHub adapter (gitvow-github) is not installed here")

REPO = {"owner": "team", "repo": "app"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_issue", {**REPO, "issue_number": 1}),
    ("search_code", {"query": "TODO"}),
    ("add_issue_comment", {**REPO, "issue_number": 1, "body": "looks good"}),
    ("issue_write", {**REPO, "method": "create", "title": "a bug"}),
    ("issue_write", {**REPO, "method": "lock"}),
    ("create_pull_request", {**REPO, "title": "t", "head": "f", "base": "main"}),
    ("merge_pull_request", {**REPO, "pullNumber": 7}),
    ("create_branch", {**REPO, "branch": "f"}),
    ("push_files", {**REPO, "branch": "f", "files": []}),
    ("delete_repository", REPO),
    ("create_repository", {"name": "new"}),
    ("manage_org_secrets", {"org": "team"}),
]
AGENTS = {"claude": "issues_only", "codex": "issues_and_prs"}
_REASON = re.compile(r"reason=([a-z_]+)")


@pytest.fixture
def policy(repo: Path, write_policy: Callable[..., Path]) -> Path:
    # the gate's built-in rules (its MCP deny list) would refuse some calls before the forge
    # stage; without them, the forge stage alone judges, as the proxy does
    rows = "\n".join(f'[agents.{agent}]\nmode = "{mode}"\n' for agent, mode in AGENTS.items())
    return write_policy(repo, 'builtin_rules = "replace"\n' + rows, name="policy.toml")


def gate_verdict(hook: Callable[..., Hooked], repo: Path, agent: str, tool: str, arguments: dict[str, Any]) -> str:
    payload = {"session_id": "s", "cwd": str(repo), "permission_mode": "default", "hook_event_name": "PreToolUse",
               "tool_name": f"mcp__github__{tool}", "tool_input": arguments}
    answer = hook("claude", "PreToolUse", payload, cwd=repo, extra_env={"GITVOW_AGENT": agent})
    if answer.code == 0 and not answer.stdout:
        return "allow"
    out = answer.json()["hookSpecificOutput"]
    if out["permissionDecision"] == "allow":
        return "allow"
    found = _REASON.search(out["permissionDecisionReason"])
    assert found, out
    return found.group(1)


def proxy_verdict(engine: Engine, agent: str, tool: str, arguments: dict[str, Any]) -> str:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    request = Request.from_url("POST", "https://api.githubcopilot.com/mcp/", body=json.dumps(body).encode(),
                               headers={"content-type": "application/json"})
    grant = engine.policy.grant_for(agent)
    assert grant is not None
    decision = engine.decide(request, Caller(agent, grant))
    assert decision.adapter == "mcp.github"
    if decision.action is Action.FORWARD:
        return "allow"
    assert decision.reason is not None and decision.message is not None
    assert decision.message.endswith(f"reason={decision.reason}")
    return decision.reason


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_the_gate_and_the_proxy_give_one_verdict_per_tool_call(repo: Path, policy: Path, agent: str,
                                                                 hook: Callable[..., Hooked]) -> None:
    plugins = installed()
    engine = Engine(load_policy(policy, relays=plugins.relays, sections=plugins.sections, absent="skip"), plugins)
    verdicts = {}
    for tool, arguments in CALLS:
        proxy = proxy_verdict(engine, agent, tool, arguments)
        gate = gate_verdict(hook, repo, agent, tool, arguments)
        verdicts[f"{tool}({arguments.get('method', '')})"] = (gate, proxy)
    disagree = {call: pair for call, pair in verdicts.items() if pair[0] != pair[1]}
    assert not disagree, disagree
    # not vacuous: each agent sees allowed calls and refusals of more than one kind
    assert {"allow", "mode_denied"} <= {gate for gate, _ in verdicts.values()}
    assert verdicts["merge_pull_request()"][0] != "allow" and verdicts["manage_org_secrets()"][0] != "allow"
