"""The proxy never forwards a body it did not read.

In-process, with mitmproxy's own flow objects and the real addons, policy loader, engine,
GitLab adapter and proxy gates: hypothesis varies the body (a note carrying ``/merge`` or an
agent's canary, in JSON, form or query), its ``Content-Encoding`` (none, gzip, deflate, br,
unknown, stacked), its ``Content-Type`` and whether it is streamed. Invariants:

- a streamed body is never forwarded (it cannot be inspected);
- what is forwarded is byte for byte what the pipeline classified (nothing appended later);
- a body that, decoded as the server would, says ``/merge`` (at ``issues_only``) or carries a
  canary is never forwarded, whatever its encoding.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import textwrap
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("gitvow_proxy", reason="the proxy is not installed")
pytest.importorskip("gitvow_gitlab", reason="the GitLab adapter plugin is not installed")

from mitmproxy.test import tflow

from gitvow_proxy.addons import proxy_addons
from gitvow_proxy.runtime import build_runtime
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import MemoryStore

SECRET = "fuzz-agent-secret"
TOKEN = "glpat-fuzz-token"
HOST = "gitlab.test"
NOTE = "/api/v4/projects/team%2Fapp/merge_requests/7/notes"


@pytest.fixture(scope="module")
def addon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Shared, str]]:
    workdir = tmp_path_factory.mktemp("fuzz-proxy")
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}" = "gitlab"

        [credentials.gitlab]
        token_env = "GITVOW_FUZZ_TOKEN"

        [canary]
        enabled = true

        [agents.bot]
        mode = "issues_only"
        secret_env = "GITVOW_FUZZ_SECRET"
    """))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GITVOW_FUZZ_TOKEN", TOKEN)
        patch.setenv("GITVOW_FUZZ_SECRET", SECRET)
        store = MemoryStore()
        canary = store.canary("bot")  # issued before the policy loads: the runtime knows every issued canary
        runtime = build_runtime(policy, store, confdir=workdir / "conf")
    shared = Shared()
    shared.runtime, shared.store = runtime, store
    yield shared, canary


def encode(body: bytes, encoding: str) -> bytes:
    for step in reversed([part.strip() for part in encoding.split(",") if part.strip()]):
        if step == "gzip":
            body = gzip.compress(body)
        elif step == "deflate":
            body = zlib.compress(body)
        elif step in ("identity", ""):
            pass
        else:
            body = bytes(reversed(body))  # an encoding nobody here can undo
    return body


async def _hook(addons: list[object], name: str, flow: Any) -> None:
    """Call one hook on every addon, in order, awaiting async ones, as mitmproxy does."""
    for addon in addons:
        method = getattr(addon, name, None)
        if method is not None:
            result = method(flow)
            if asyncio.iscoroutine(result):
                await result


def send(shared: Shared, body: bytes, headers: dict[str, str], *, query: str = "",
         stream: bool = False) -> tuple[Any, list[bytes]]:
    flow = tflow.tflow()
    request = flow.request
    request.method = "POST"
    request.scheme = "https"
    request.host = HOST
    request.port = 443
    request.path = NOTE + (f"?{query}" if query else "")
    request.headers.clear()
    request.headers["proxy-authorization"] = "Basic " + base64.b64encode(f"bot:{SECRET}".encode()).decode()
    for name, value in headers.items():
        request.headers[name] = value
    request.raw_content = body
    request.stream = stream
    seen: list[bytes] = []
    engine = shared.runtime.engine  # type: ignore[union-attr]
    addons = proxy_addons(shared)
    original = engine.judge  # every request the proxy judges is classified there

    def recording(req: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(req.body)
        return original(req, *args, **kwargs)

    engine.judge = recording  # type: ignore[method-assign]
    try:
        asyncio.run(_hook(addons, "requestheaders", flow))
        asyncio.run(_hook(addons, "request", flow))  # mitmproxy awaits the async request hooks
    finally:
        engine.judge = original  # type: ignore[method-assign]
    return flow, seen


TEXTS = st.sampled_from(("Looks good.\n/merge", "/MERGE", "ok\r\n/merge now", "fine\n/approve", "plain words", "CANARY"))
ENCODINGS = st.sampled_from(("", "identity", "gzip", "deflate", "br", "gzip, gzip", "x-unknown", "GZIP"))
CARRIERS = st.sampled_from(("json", "form", "query", "json-escaped"))


@given(TEXTS, ENCODINGS, CARRIERS, st.booleans())
def test_the_proxy_never_forwards_a_body_it_did_not_read(
    addon: tuple[Shared, str], text: str, encoding: str, carrier: str, stream: bool
) -> None:
    instance, canary = addon
    text = text.replace("CANARY", f"see {canary}")
    query = ""
    if carrier == "json":
        raw, content_type = json.dumps({"body": text}).encode(), "application/json"
    elif carrier == "json-escaped":
        raw, content_type = json.dumps({"body": text}).replace("/", "\\u002f").encode(), "application/json"
    elif carrier == "form":
        raw, content_type = f"body={quote(text, safe='')}".encode(), "application/x-www-form-urlencoded"
    else:
        raw, content_type, query = b"", "application/json", f"body={quote(text, safe='')}"
    headers = {"content-type": content_type}
    if encoding:
        headers["content-encoding"] = encoding
    body = encode(raw, encoding.lower()) if raw else raw
    flow, seen = send(instance, body, headers, query=query, stream=stream)
    forwarded = flow.response is None
    if stream:
        assert not forwarded, "a streamed body was forwarded"
        return
    if forwarded:
        assert seen and set(seen) == {flow.request.raw_content}, "the forwarded body is not the body classified"
        dangerous = "/merge" in text.lower() or canary in text
        assert not dangerous, (text, encoding, carrier)
        assert flow.request.headers["authorization"] == f"Bearer {TOKEN}"
    else:
        assert flow.response.status_code in (403, 429)
        assert flow.response.headers.get("x-gitvow-reason")
