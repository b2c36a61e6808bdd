"""Remembered reads (``gitvow_proxy.read_memo``): the same read is decided once per policy
load; anything else (another byte of path, header or body, another agent, a write, a refusal,
a read naming a target, a new policy) is decided afresh."""

from __future__ import annotations

import asyncio
import base64
import inspect
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow

from gitvow_proxy.addons import gitvow_addon
from gitvow_proxy.flow_metadata import AUDIT_KEY, SECRETS_KEY
from gitvow_proxy.shared import Shared

pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")

NETLOC = "127.0.0.1:4443"
AGENTS = {"coder": "coder-secret", "other": "other-secret"}


def _policy(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "{NETLOC}" = "github"
        [credentials.github]
        token_env = "MEMO_GITHUB_TOKEN"
        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "MEMO_CODER"
        [agents.other]
        mode = "advisory"
        secret_env = "MEMO_OTHER"
        [proxy]
        state = "{tmp_path / 'state.sqlite'}"
        allowed_repos = ["team/*"]
        [audit]
        path = "{tmp_path / 'audit.jsonl'}"
    """) + textwrap.dedent(extra))
    return path


class Proxy:
    """The proxy's addon chain under a policy, with the engine's classifications counted."""

    def __init__(self, chain: Any, shared: Shared) -> None:
        self.chain, self.shared = chain, shared
        self.classified: list[str] = []

    def count_classifications(self) -> None:
        """Count the decisions the engine is asked for (each classifies the request)."""
        engine = self.shared.runtime.engine  # type: ignore[union-attr]
        judge = engine.judge

        def counted(request: Any, *args: Any) -> Any:
            self.classified.append(f"{request.method} {request.path}")
            return judge(request, *args)

        engine.judge = counted  # type: ignore[method-assign]

    def send(self, method: str, path: str, body: bytes = b"", agent: str = "coder",
             headers: dict[str, str] | None = None) -> http.HTTPFlow:
        flow = tflow.tflow()
        auth = "Basic " + base64.b64encode(f"{agent}:{AGENTS[agent]}".encode()).decode()
        flow.request = http.Request.make(method, f"https://{NETLOC}{path}", body, {
            "Host": NETLOC, "Content-Type": "application/json", "Proxy-Authorization": auth, **(headers or {})})
        for hook in (self.chain.requestheaders, self.chain.request):
            result = hook(flow)
            if inspect.isawaitable(result):
                asyncio.run(_awaited(result))
        return flow


async def _awaited(result: Any) -> None:
    await result


@contextmanager
def chain_under_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxy]:
    """The proxy's addon chain configured with :func:`_policy` (``test_write_memos`` uses it too)."""
    monkeypatch.setenv("MEMO_GITHUB_TOKEN", "ghs_memotoken0123456789")
    monkeypatch.setenv("MEMO_CODER", AGENTS["coder"])
    monkeypatch.setenv("MEMO_OTHER", AGENTS["other"])
    shared = Shared()
    chain = gitvow_addon(shared)
    with taddons.context(chain) as tctx:
        tctx.configure(chain, gitvow_policy=str(_policy(tmp_path)), confdir=str(tmp_path / "conf"))
        yield Proxy(chain, shared)
    shared.tally.stop()


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxy]:
    with chain_under_policy(tmp_path, monkeypatch) as proxy:
        proxy.count_classifications()
        yield proxy


def forwarded(flow: http.HTTPFlow) -> bool:
    return flow.response is None and flow.request.headers.get("authorization") == "Bearer ghs_memotoken0123456789"


def test_the_same_read_is_decided_once_and_forwarded_each_time(proxy: Proxy) -> None:
    """Remembered, a read is still applied in full: the agent's credentials dropped, the
    forge's added, the response's scrub armed, its own audit entry."""
    flows = [proxy.send("GET", "/api/v3/repos/team/app/pulls", headers={"Authorization": "token agent-own"})
             for _ in range(3)]
    assert all(forwarded(f) for f in flows)
    assert proxy.classified == ["GET /api/v3/repos/team/app/pulls"]
    for flow in flows:
        assert "proxy-authorization" not in flow.request.headers
        assert flow.request.headers.get_all("authorization") == ["Bearer ghs_memotoken0123456789"]
        assert b"ghs_memotoken0123456789" in flow.metadata[SECRETS_KEY]
        entry = flow.metadata[AUDIT_KEY]
        assert (entry.verdict, entry.agent, entry.path, entry.repo) == ("allow", "coder", "/api/v3/repos/team/app/pulls",
                                                                        "team/app")
        assert entry.written  # the audit addon wrote its line
    assert len({id(flow.metadata[AUDIT_KEY]) for flow in flows}) == 3


@pytest.mark.parametrize("second", [
    {"path": "/api/v3/repos/team/%61pp/pulls"},  # a respelling is another request
    {"path": "/api/v3/repos/team/app/pulls?state=all"},
    {"path": "/api/v3/repos/team/App/pulls"},
    {"headers": {"X-HTTP-Method-Override": "PUT"}},
    {"headers": {"Accept": "application/vnd.github+json"}},
    {"agent": "other"},
    {"method": "HEAD"},
])
def test_anything_else_is_decided_afresh(proxy: Proxy, second: dict[str, Any]) -> None:
    proxy.send("GET", "/api/v3/repos/team/app/pulls")
    again = {"method": "GET", "path": "/api/v3/repos/team/app/pulls", **second}
    proxy.send(again.pop("method"), again.pop("path"), **again)
    assert len(proxy.classified) == 2, proxy.classified


def test_a_graphql_query_is_remembered_by_its_body(proxy: Proxy) -> None:
    query = b'{"query": "query { viewer { login } }"}'
    for _ in range(2):
        assert forwarded(proxy.send("POST", "/api/graphql", query))
    assert len(proxy.classified) == 1
    mutation = b'{"query": "mutation { addStar(input: {starrableId: \\"R_1\\"}) { clientMutationId } }"}'
    proxy.send("POST", "/api/graphql", query + b" ")
    assert len(proxy.classified) == 2  # one byte more: decided afresh
    for _ in range(2):  # a write, never remembered
        proxy.send("POST", "/api/graphql", mutation)
    assert len(proxy.classified) == 4


def test_writes_and_refusals_are_never_remembered(proxy: Proxy) -> None:
    for _ in range(2):
        assert forwarded(proxy.send("POST", "/api/v3/repos/team/app/issues/1/comments", b'{"body": "hi"}'))
    for _ in range(2):  # advisory: a write refused each time, decided each time
        refused = proxy.send("POST", "/api/v3/repos/team/app/issues/1/comments", b'{"body": "hi"}', agent="other")
        assert refused.response is not None and refused.response.status_code == 403
    for _ in range(2):  # a path GitHub would route elsewhere: refused
        unknown = proxy.send("GET", "/api/v3/repos/team/app/pulls/./1")
        assert unknown.response is not None and unknown.response.status_code == 403, unknown.response
    for _ in range(2):  # a read refused (a repository this proxy does not serve)
        outside = proxy.send("GET", "/api/v3/repos/elsewhere/app/pulls")
        assert outside.response is not None and outside.response.headers["x-gitvow-reason"] == "repo_not_in_config"
    assert len(proxy.classified) == 8


def test_a_new_policy_forgets_every_read(proxy: Proxy, tmp_path: Path) -> None:
    proxy.send("GET", "/api/v3/repos/team/app/pulls")
    with taddons.context(proxy.chain) as tctx:  # a reload: a new runtime
        tctx.configure(proxy.chain, gitvow_policy=str(_policy(tmp_path, """
            [run_state]
            paused = ["team/other"]
        """)))
    proxy.count_classifications()
    proxy.classified.clear()
    assert forwarded(proxy.send("GET", "/api/v3/repos/team/app/pulls"))
    assert proxy.classified == ["GET /api/v3/repos/team/app/pulls"]


def test_a_large_body_is_not_remembered(proxy: Proxy) -> None:
    big = b'{"query": "query { viewer { login } }", "pad": "' + b"x" * 20000 + b'"}'
    for _ in range(2):
        proxy.send("POST", "/api/graphql", big)
    assert len(proxy.classified) == 2
