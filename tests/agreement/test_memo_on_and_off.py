"""The runtime's one cache changes no decision: every corpus, decided with it on and off.

The corpus is every installed adapter's own wire examples (the contract kit's fixtures,
near misses and fail-closed examples included), on every host they name. Each
request goes through the proxy's real addon chain (identity, transport checks, the engine,
the credential injection, the audit entry) twice in a row, under one policy with the cache
on and under the same policy with ``GITVOW_MEMO=off``, for an agent that may write and one
that may not. What the agent sees and what the audit says must be the same every time:
the status and reason of a refusal, the headers forwarded upstream, and the audit line's
verdict, reason, stage, operations and repository.

A cache kind that answered for a request it should not have (a key missing an input) shows
up here as a difference between the second sending with the cache on and the same sending
with it off.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gitvow_proxy")
for _needed in ("gitvow_github", "gitvow_gitlab", "gitvow_gitea", "gitvow_linear", "gitvow_gitsmart", "gitvow_bitbucket"):
    pytest.importorskip(_needed)

from mitmproxy import http  # noqa: E402
from mitmproxy.test import taddons, tflow  # noqa: E402

from gitvow.memo import MEMO_ENV  # noqa: E402
from gitvow.plugins import installed  # noqa: E402
from gitvow.request import Fixture  # noqa: E402
from gitvow_proxy.addons import gitvow_addon  # noqa: E402
from gitvow_proxy.flow_metadata import AUDIT_KEY  # noqa: E402
from gitvow_proxy.read_memo import READS  # noqa: E402
from gitvow_proxy.shared import Shared  # noqa: E402

AGENTS = {"writer": ("issues_prs_merge", "writer-secret"), "reader": ("advisory", "reader-secret")}


def corpus() -> list[tuple[str, Fixture]]:
    """(adapter, fixture) for every wire example of every installed adapter."""
    found: list[tuple[str, Fixture]] = []
    for name, adapter in sorted(installed().adapters.items()):
        for fixture in [*adapter.fixtures(), *adapter.fail_closed_fixtures()]:
            if fixture.url.startswith("https://"):
                found.append((name, fixture))
    return found


def _host(fixture: Fixture) -> str:
    request = fixture.request()
    return request.host if request.port == 443 else f"{request.host}:{request.port}"


def _policy(tmp_path: Path, items: list[tuple[str, Fixture]]) -> Path:
    hosts = {}
    for adapter, fixture in items:
        hosts.setdefault(_host(fixture), adapter)
    lines = ["[hosts]", *(f'"{host}" = "{adapter}"' for host, adapter in sorted(hosts.items()))]
    for name in sorted(installed().adapters):
        lines += [f"[credentials.{name}]", f'token_env = "MEMO_TOKEN_{name.upper().replace("-", "_")}"']
    for agent, (mode, _) in AGENTS.items():
        lines += [f"[agents.{agent}]", f'mode = "{mode}"', f'secret_env = "MEMO_AGENT_{agent.upper()}"']
    lines += ["[proxy]", f'state = "{tmp_path / "state.sqlite"}"', "[audit]", f'path = "{tmp_path / "audit.jsonl"}"']
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "policy.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, items: list[tuple[str, Fixture]],
          memo: bool) -> Iterator[tuple[Any, Shared]]:
    for name in installed().adapters:
        monkeypatch.setenv(f"MEMO_TOKEN_{name.upper().replace('-', '_')}", f"tok-{name}-0123456789")
    for agent, (_, secret) in AGENTS.items():
        monkeypatch.setenv(f"MEMO_AGENT_{agent.upper()}", secret)
    if memo:
        monkeypatch.delenv(MEMO_ENV, raising=False)
    else:
        monkeypatch.setenv(MEMO_ENV, "off")
    shared = Shared()
    addon = gitvow_addon(shared)
    with taddons.context(addon) as tctx:
        tctx.configure(addon, gitvow_policy=str(_policy(tmp_path, items)), confdir=str(tmp_path / "conf"))
        yield addon, shared
    shared.tally.stop()


async def _awaited(result: Any) -> None:
    await result


def send(addon: Any, fixture: Fixture, agent: str) -> tuple[object, ...]:
    """One sending of ``fixture`` as ``agent``, and everything it showed: the refusal (status,
    reason), the header fields forwarded, the audit line's fields."""
    secret = AGENTS[agent][1]
    auth = "Basic " + base64.b64encode(f"{agent}:{secret}".encode()).decode()
    flow = tflow.tflow()
    flow.request = http.Request.make(fixture.method, fixture.url, fixture.body,
                                     {**fixture.headers, "Proxy-Authorization": auth})
    for hook in (addon.requestheaders, addon.request):
        result = hook(flow)
        if inspect.isawaitable(result):
            asyncio.run(_awaited(result))
    refusal = None
    if flow.response is not None:
        refusal = (flow.response.status_code, flow.response.headers.get("x-gitvow-reason"))
    entry = flow.metadata.get(AUDIT_KEY)
    audit = None if entry is None else (entry.verdict, entry.reason, entry.stage, entry.operations, entry.repo)
    forwarded = None if flow.response is not None else tuple(flow.request.headers.fields)
    return refusal, forwarded, audit


def decisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, items: list[tuple[str, Fixture]],
              memo: bool) -> tuple[list[tuple[object, ...]], int]:
    """Every item sent twice in a row by each agent; and how many entries the cache kept."""
    seen: list[tuple[object, ...]] = []
    with chain(tmp_path, monkeypatch, items, memo) as (addon, shared):
        for _, fixture in items:
            for agent in AGENTS:
                seen.append(send(addon, fixture, agent))
                seen.append(send(addon, fixture, agent))
        runtime = shared.runtime
        assert runtime is not None
        kept = len(runtime.engine.memo)
    return seen, kept


def test_every_corpus_decides_the_same_with_the_cache_on_and_off(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    items = corpus()
    assert len({adapter for adapter, _ in items}) >= 6 and len(items) > 200
    on, kept = decisions(tmp_path / "on", monkeypatch, items, memo=True)
    off, none = decisions(tmp_path / "off", monkeypatch, items, memo=False)
    assert kept > 0 and none == 0, "the cache was not used with it on, or used with it off"
    differ = [(items[i // 4][1].id, on[i], off[i]) for i in range(len(on)) if on[i] != off[i]]
    assert not differ, "\n".join(f"{fid}\n  on:  {a}\n  off: {b}" for fid, a, b in differ[:10])


def test_the_cache_declares_what_its_keys_hold() -> None:
    """Every kind states its bound and, in words, what its key holds."""
    assert READS.size > 0 and "agent" in READS.key and "body" in READS.key and "header" in READS.key
