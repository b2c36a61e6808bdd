"""MCP on the wire, end to end: the ``mcp`` SDK's streamable-HTTP client through a ``gitvow
proxy`` process to a loopback stand-in for GitHub's hosted MCP server, built with the same
SDK, that records every tool call it receives (``mcp_server.py``).

The stand-in answers on ``api.githubcopilot.com`` (resolved to loopback), the inference
adapter's host, so the ``[mcp.github]`` endpoint must win there by path. An issues_only
agent comments (reaches the server with the GitHub token as Bearer and its toolset headers),
is refused a merge it can read, has it approved by a human and sent once, gets the recorded
result on its retry; sees a filtered tool list where the policy asks; and another agent
cannot speak in its session.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from proxy_support import GIT_TOKEN, GITVOW, RESOLVE_ADDON, ProxyProcess, proxy_env, start_proxy

from gitvow.testing import free_port, wait_for_port

mcp = pytest.importorskip("mcp", reason="the mcp SDK is not installed")
import httpx2  # noqa: E402  (the SDK's HTTP client, installed with it)
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.sse import sse_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

pytestmark = pytest.mark.e2e

HOST = "api.githubcopilot.com"  # GitHub's hosted MCP server's host, here on loopback
PLAIN = "mcp.example.test"  # the same server under an endpoint that does not filter tools/list
LEGACY = "legacy.example.test"  # a server of the older HTTP+SSE transport
AGENTS = {"issues": "issues-secret-7", "other": "other-secret-8", "writer": "writer-secret-9"}
REPO = {"owner": "team", "repo": "app"}
ID = re.compile(r"approval ([0-9A-Z]{6})")


def _serve(ca: trustme.CA, workdir: Path, *flags: str) -> Iterator[tuple[int, Path]]:
    pem = workdir / "server.pem"
    ca.issue_cert(HOST, PLAIN, LEGACY, "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(pem))
    record = workdir / "calls.jsonl"
    record.touch()
    port = free_port()
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("mcp_server.py")), str(port), str(pem),
                             str(pem), str(record), *flags], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc)
        yield port, record
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


@pytest.fixture(scope="module")
def server(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    yield from _serve(ca, tmp_path_factory.mktemp("mcp-server"))


@pytest.fixture(scope="module")
def legacy(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    yield from _serve(ca, tmp_path_factory.mktemp("mcp-legacy"), "--sse")


@pytest.fixture(scope="module")
def proxy(server: tuple[int, Path], legacy: tuple[int, Path], ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    port, _ = server
    workdir = tmp_path_factory.mktemp("mcp-proxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}:{port}" = "inference"

        [mcp.github]
        url = "https://{HOST}:{port}/mcp/"
        tools = "github"
        filter_tools = true

        [mcp.plain]
        url = "https://{PLAIN}:{port}/mcp/"
        tools = "github"

        [mcp.legacy]
        url = "https://{LEGACY}:{legacy[0]}/"
        tools = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [approvals]
        poll_interval = 0.2

        [agents.issues]
        mode = "issues_only"
        secret_env = "GITVOW_TEST_MCP_ISSUES"

        [agents.other]
        mode = "issues_only"
        secret_env = "GITVOW_TEST_MCP_OTHER"

        [agents.writer]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_MCP_WRITER"

        [branches]
        protected = ["main", "release/*"]
        default_branch = false

        [paths]
        rules = {{ ".github/workflows/**" = "refuse" }}

        [operations."contents.write"]
        min_mode = "issues_and_prs"
    """))
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": f"{HOST},{PLAIN},{LEGACY}",
           "GITVOW_TEST_MCP_ISSUES": AGENTS["issues"], "GITVOW_TEST_MCP_OTHER": AGENTS["other"], "GITVOW_TEST_MCP_WRITER": AGENTS["writer"]}
    running = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def calls(record: Path, tool: str | None = None) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    return [line for line in lines if tool is None or line["tool"] == tool]


def _http(proxy: ProxyProcess, agent: str, **headers: str) -> httpx2.AsyncClient:
    context = ssl.create_default_context(cafile=str(proxy.ca))
    return httpx2.AsyncClient(proxy=proxy.url(agent, AGENTS[agent]), verify=context, headers=headers,
                              timeout=httpx2.Timeout(30, read=60))


async def _session(proxy: ProxyProcess, agent: str, url: str, steps: Any, **headers: str) -> Any:
    async with (_http(proxy, agent, **headers) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        return await steps(session)


def run(proxy: ProxyProcess, agent: str, url: str, steps: Any, **headers: str) -> Any:
    return asyncio.run(asyncio.wait_for(_session(proxy, agent, url, steps, **headers), 120))


def operator(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """The operator's CLI, with no forge token and no agent secret in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(proxy.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_an_issues_only_agents_comment_reaches_the_server_with_the_forges_token(
        proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    port, record = server

    async def comment(session: ClientSession) -> Any:
        return await session.call_tool("add_issue_comment", {**REPO, "issue_number": 1, "body": "looks good"})

    result = run(proxy, "issues", f"https://{HOST}:{port}/mcp/", comment,
                 **{"X-MCP-Toolsets": "issues,pull_requests", "X-MCP-Readonly": "false"})
    assert not result.is_error and result.content[0].text == "done: add_issue_comment"
    seen = calls(record, "add_issue_comment")
    assert len(seen) == 1 and seen[0]["arguments"]["body"] == "looks good"
    assert seen[0]["authorization"] == f"Bearer {GIT_TOKEN}"
    assert seen[0]["x-mcp"] == {"x-mcp-toolsets": "issues,pull_requests", "x-mcp-readonly": "false"}
    assert seen[0]["session"]  # a stateful session, bound to this agent


def test_an_event_stream_passes_as_it_arrives(proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    """The server sends a progress notification on the call's event stream and answers only once
    the client has seen it: held back until the stream ended, it would never be answered."""
    port, record = server
    release = record.with_name("release")
    release.unlink(missing_ok=True)
    seen: list[str | None] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        release.touch()

    async def slow(session: ClientSession) -> Any:
        return await session.call_tool("get_issue", {**REPO, "issue_number": 999}, read_timeout_seconds=30,
                                       progress_callback=progress)

    result = run(proxy, "issues", f"https://{HOST}:{port}/mcp/", slow)
    assert seen == ["halfway"]
    assert not result.is_error and result.content[0].text == "released"


def test_a_merge_is_refused_visibly_staged_sent_once_when_approved_and_answered_again(
        proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    port, record = server
    url = f"https://{HOST}:{port}/mcp/"
    merge = {**REPO, "pullNumber": 7}

    async def first(session: ClientSession) -> Any:
        return await session.call_tool("merge_pull_request", merge)

    refused = run(proxy, "issues", url, first)
    assert refused.is_error, refused
    line = refused.content[0].text
    assert "reason=" in line and "\n" not in line.strip()
    found = ID.search(line)
    assert found, line
    ident = found.group(1)
    assert calls(record, "merge_pull_request") == []  # staged, not sent

    listed = operator(proxy, "approvals", "list")
    assert ident in listed.stdout, listed.stdout + listed.stderr
    assert operator(proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    waited = operator(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert len(calls(record, "merge_pull_request")) == 1  # sent, once

    async def retry(session: ClientSession) -> Any:
        again = await session.call_tool("merge_pull_request", merge)  # a new session, a new request id
        return again, await session.call_tool("merge_pull_request", merge)

    answers = run(proxy, "issues", url, retry)
    for answer in answers:
        assert not answer.is_error and answer.content[0].text == "Pull Request successfully merged", answer
    assert len(calls(record, "merge_pull_request")) == 1  # the retries got the recorded result


def test_tools_list_is_filtered_where_the_policy_asks(proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    port, _ = server

    async def names(session: ClientSession) -> list[str]:
        return [tool.name for tool in (await session.list_tools()).tools]

    filtered = run(proxy, "issues", f"https://{HOST}:{port}/mcp/", names)
    everything = run(proxy, "issues", f"https://{PLAIN}:{port}/mcp/", names)
    assert {"get_issue", "add_issue_comment", "issue_write", "merge_pull_request"} <= set(filtered)
    assert not {"create_branch", "push_files", "manage_org_secrets", "create_repository"} & set(filtered)
    assert {"create_branch", "push_files", "manage_org_secrets"} <= set(everything)
    assert set(filtered) < set(everything)


def test_an_unknown_tool_is_refused_and_never_reaches_the_server(proxy: ProxyProcess,
                                                                 server: tuple[int, Path]) -> None:
    port, record = server

    async def secrets(session: ClientSession) -> Any:
        return await session.call_tool("manage_org_secrets", {"org": "team"})

    refused = run(proxy, "issues", f"https://{PLAIN}:{port}/mcp/", secrets)
    assert refused.is_error and "reason=mode_denied" in refused.content[0].text
    assert calls(record, "manage_org_secrets") == []


def test_one_agents_session_is_refused_to_another(proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    port, record = server
    url = f"https://{HOST}:{port}/mcp/"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add_issue_comment", "arguments": {**REPO, "issue_number": 1, "body": "hijacked"}}}

    async def post(agent: str, session_id: str) -> Any:
        headers = {"Mcp-Session-Id": session_id, "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-11-25"}
        async with _http(proxy, agent) as http:
            return await http.post(url, json=body, headers=headers)

    async def hijacked_while_open(session: ClientSession) -> tuple[Any, Any, Any]:
        assert not (await session.call_tool("get_issue", {**REPO, "issue_number": 1})).is_error
        session_id = calls(record, "get_issue")[-1]["session"]
        stolen = await post("other", session_id)
        made_up = await post("issues", "not-a-session")
        mine = await session.call_tool("get_issue", {**REPO, "issue_number": 2})  # the owner's session still works
        return stolen, made_up, mine

    before = len(calls(record, "add_issue_comment"))
    stolen, made_up, mine = run(proxy, "issues", url, hijacked_while_open)
    assert stolen.status_code == 403 and stolen.headers["x-gitvow-reason"] == "mcp_session"
    error = stolen.json()["error"]
    assert error["message"].endswith("reason=mcp_session") and "another agent" in error["message"], error
    assert made_up.status_code == 403 and "not opened through gitvow" in made_up.json()["error"]["message"]
    assert not mine.is_error
    assert len(calls(record, "add_issue_comment")) == before  # neither reached the server
    audit = [line for line in proxy.audit_lines() if line.get("reason") == "mcp_session"]
    assert {line["agent"] for line in audit} == {"other", "issues"}


def test_the_older_transport_is_judged_and_its_session_bound(proxy: ProxyProcess, legacy: tuple[int, Path]) -> None:
    """HTTP+SSE (MCP 2024-11-05): the event stream passes as it arrives (the client waits on it
    for every answer), the ``endpoint`` event's session is bound to the agent, and each POST
    to the message endpoint is judged like a Streamable HTTP one."""
    port, record = legacy
    context = ssl.create_default_context(cafile=str(proxy.ca))

    def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(proxy=proxy.url("issues", AGENTS["issues"]), verify=context, headers=headers,
                                  timeout=timeout, auth=auth)

    def call(tool: str, ident: int, **arguments: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}

    async def post(agent: str, session_id: str, body: dict[str, Any]) -> Any:
        async with _http(proxy, agent) as http:
            return await http.post(f"https://{LEGACY}:{port}/messages/?session_id={session_id}", json=body)

    async def steps() -> tuple[Any, Any, Any]:
        async with (sse_client(f"https://{LEGACY}:{port}/sse", httpx_client_factory=factory) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            ok = await session.call_tool("add_issue_comment", {**REPO, "issue_number": 1, "body": "over sse"})
            session_id = calls(record, "add_issue_comment")[-1]["session"]
            stolen = await post("other", session_id, call("add_issue_comment", 90, **REPO, body="hijacked"))
            merge = await post("issues", session_id, call("merge_pull_request", 91, **REPO, pullNumber=7))
            return ok, stolen, merge

    ok, stolen, merge = asyncio.run(asyncio.wait_for(steps(), 120))
    assert not ok.is_error and ok.content[0].text == "done: add_issue_comment"
    assert stolen.status_code == 403 and stolen.headers["x-gitvow-reason"] == "mcp_session"
    refused = merge.json()
    assert refused["id"] == 91 and refused["result"]["isError"]
    assert "reason=" in refused["result"]["content"][0]["text"]
    assert [c["arguments"].get("body") for c in calls(record)] == ["over sse"]  # neither other call arrived


#: Writes through MCP tools that carry the change of the REST write they stand for, each with the
#: line the agent is shown; none of them reaches the server.
REFUSED_WRITES: list[tuple[str, dict[str, Any], str]] = [
    ("push_files", {**REPO, "branch": "main", "message": "m", "files": [{"path": "src/a.py", "content": "x"}]},
     "refs/heads/main is a protected branch"),
    ("push_files", {**REPO, "branch": "agent/x", "message": "m",
                    "files": [{"path": ".github/workflows/ci.yml", "content": "on: push"}]},
     ".github/workflows/ci.yml is a protected path; ask a human to change it. reason=path_protected"),
    ("create_or_update_file", {**REPO, "path": "src/a.py", "content": "x", "message": "m", "branch": "release/9"},
     "refs/heads/release/9 is a protected branch; push to a branch of your own and open a pull request. "
     "reason=branch_protected"),
    ("create_or_update_file", {**REPO, "path": ".github/workflows/ci.yml", "content": "on: push", "message": "m",
                               "branch": "agent/x"},
     ".github/workflows/ci.yml is a protected path; ask a human to change it. reason=path_protected"),
    ("delete_branch", {**REPO, "branch": "agent/x"}, "reason=ref_delete"),
    ("update_pull_request", {**REPO, "pullNumber": 3, "base": "main"},
     "refs/heads/main is a protected branch; push to a branch of your own and open a pull request. "
     "reason=branch_protected"),
    ("push_files", {**REPO, "branch": "agent/x", "message": "m", "files": "src/a.py"},
     "what the write changes could not be established: files is not a list of files; ask a human. "
     "reason=change_unestablished"),
]


@pytest.mark.parametrize(("tool", "arguments", "line"), REFUSED_WRITES, ids=[f"{t} {i}" for i, (t, _, _) in
                                                                              enumerate(REFUSED_WRITES)])
def test_a_tools_write_is_judged_by_its_change_and_the_server_never_acts(
        proxy: ProxyProcess, server: tuple[int, Path], tool: str, arguments: dict[str, Any], line: str) -> None:
    port, record = server
    before = len(calls(record, tool))

    async def write(session: ClientSession) -> Any:
        return await session.call_tool(tool, arguments)

    refused = run(proxy, "writer", f"https://{PLAIN}:{port}/mcp/", write)
    assert refused.is_error
    text = refused.content[0].text
    assert text.startswith("gitvow refused ") and line in text and "\n" not in text, text
    assert len(calls(record, tool)) == before  # the forge never acted


def test_a_tools_write_the_rules_allow_reaches_the_server(proxy: ProxyProcess, server: tuple[int, Path]) -> None:
    """The control: the same tools on the agent's own branch and an unprotected path go through."""
    port, record = server
    arguments = {**REPO, "branch": "agent/x", "message": "m", "files": [{"path": "src/a.py", "content": "x"}]}

    async def write(session: ClientSession) -> Any:
        return await session.call_tool("push_files", arguments)

    done = run(proxy, "writer", f"https://{PLAIN}:{port}/mcp/", write)
    assert not done.is_error and done.content[0].text == "done: push_files"
    assert calls(record, "push_files")[-1]["arguments"] == arguments
