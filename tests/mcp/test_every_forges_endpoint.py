"""Every forge with an MCP tool table can be an ``[mcp.NAME]`` endpoint: GitLab's built-in
server, Linear's hosted one, a Gitea/Forgejo MCP server. Each ``tools/call`` on the wire is
classified by that forge's table, exactly as the agent gate classifies the same tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitvow.pipeline import Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Request

CASES: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("gitlab", "https://gitlab.com/api/v4/mcp", "merge_merge_request",
     {"project_id": "team/app", "merge_request_iid": 3}, "pr.merge"),
    ("gitlab", "https://gitlab.com/api/v4/mcp", "get_issue", {"project_id": "team/app", "issue_iid": 1}, "read"),
    ("linear", "https://mcp.linear.app/mcp", "create_comment", {"issueId": "ENG-1", "body": "hi"}, "issue.comment"),
    ("gitea", "https://gitea.example.test/mcp", "merge_pull_request", {"owner": "team", "repo": "app", "index": 2},
     "pr.merge"),
]


@pytest.mark.parametrize(("forge", "url", "tool", "arguments", "operation"), CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_tool_call_is_what_the_forges_table_says(forge: str, url: str, tool: str, arguments: dict[str, Any],
                                                    operation: str) -> None:
    plugins = installed()
    adapter = plugins.adapters.get(forge)
    if adapter is None:
        pytest.skip(f"the {forge} adapter is not installed here")
    gate_view = adapter.classify_mcp_tool(f"mcp__{forge}__{tool}", arguments)
    assert gate_view is not None and operation in gate_view.operations, gate_view
    policy = parse_policy({"mcp": {forge: {"url": url, "tools": forge}}}, relays=plugins.relays, sections=(),
                          absent="skip")
    engine = Engine(policy, plugins)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    found, classification = engine.classify(Request.from_url("POST", url, body=json.dumps(body).encode()))
    assert found is engine.adapters[f"mcp.{forge}"] and classification is not None
    assert classification.operations == gate_view.operations
    assert classification.repo == gate_view.repo
