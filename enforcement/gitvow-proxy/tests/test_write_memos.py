"""What a write's decision path remembers, and that each input of each memo is decided afresh
when it changes: the credential injection (:class:`~gitvow_proxy.addons.enforcement.Injections`)
and the GitHub adapter's REST classification. Run through the proxy's addon chain on
mitmproxy flows, as ``test_read_memo`` does."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from test_read_memo import NETLOC, Proxy, chain_under_policy, forwarded

from gitvow.pipeline import Action, Decision
from gitvow.request import Request
from gitvow.verdict import ALLOW
from gitvow_proxy.addons.enforcement import PolicyEnforcement
from gitvow_proxy.flow_metadata import SECRETS_KEY

pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")

TOKEN = "ghs_memotoken0123456789"
COMMENT = "/api/v3/repos/team/app/issues/1/comments"


@pytest.fixture
def writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxy]:
    with chain_under_policy(tmp_path, monkeypatch) as proxy:
        yield proxy


def enforcement(proxy: Proxy) -> PolicyEnforcement:
    return next(addon for addon in proxy.chain.chained if isinstance(addon, PolicyEnforcement))


def test_each_write_forwards_its_own_fields(writer: Proxy) -> None:
    """The same client's writes differ in their length and their values: each is forwarded
    with its own, the agent's credentials dropped wherever they are, the forge's added once."""
    first = writer.send("POST", COMMENT, b'{"body": "hi"}', headers={"Accept": "application/json"})
    second = writer.send("POST", COMMENT, b'{"body": "a longer comment"}', headers={"Accept": "text/plain"})
    for flow, body in ((first, b'{"body": "hi"}'), (second, b'{"body": "a longer comment"}')):
        assert forwarded(flow)
        assert flow.request.headers["content-length"] == str(len(body))
        assert "proxy-authorization" not in flow.request.headers
        assert TOKEN.encode() in flow.metadata[SECRETS_KEY]
    assert (first.request.headers["accept"], second.request.headers["accept"]) == ("application/json", "text/plain")
    # Another set of names: the agent's own Authorization, never forwarded, in a place the
    # first writes did not have a field.
    third = writer.send("POST", COMMENT, b'{"body": "hi"}', headers={"AUTHORIZATION": "token agent-own",
                                                                    "Accept": "application/json"})
    assert third.request.headers.get_all("authorization") == [f"Bearer {TOKEN}"]
    assert [name.lower() for name, _ in third.request.headers.fields] == \
        [name.lower() for name, _ in first.request.headers.fields]


def test_the_injection_follows_the_credential_headers_and_the_runtime(writer: Proxy) -> None:
    """Other credential headers are another injection; another runtime (a reload) its own
    memo, with its own secrets to scrub."""
    addon = enforcement(writer)
    runtime = writer.shared.runtime
    assert runtime is not None
    fields = ((b"Host", NETLOC.encode()), (b"Authorization", b"token agent-own"), (b"Content-Length", b"2"))
    bearer = Decision(Action.FORWARD, "forward", "github", None, ALLOW, headers={"authorization": "Bearer one"})
    basic = Decision(Action.FORWARD, "forward", "github", None, ALLOW, headers={"authorization": "Basic dHdv"})
    assert addon._injections(runtime).apply(fields, bearer)[0] == (*fields[::2], (b"authorization", b"Bearer one"))
    sent, secrets = addon._injections(runtime).apply(fields, basic)
    assert sent == (*fields[::2], (b"authorization", b"Basic dHdv")) and secrets is not None and b"dHdv" in secrets
    reloaded = replace(runtime, needles=(b"another-token",))
    _, secrets = addon._injections(reloaded).apply(fields, bearer)
    assert secrets is not None and secrets[0] == b"another-token" and TOKEN.encode() not in secrets


def test_a_rest_classification_is_remembered_only_where_the_body_is_not_read(writer: Proxy) -> None:
    """A comment's classification reads its method, host and path: remembered by them. A file
    write and an issue reads the body: each is classified with its own."""
    runtime = writer.shared.runtime
    assert runtime is not None
    engine = runtime.engine
    def classified(method: str, path: str, body: bytes = b"") -> object:
        return engine.classify(Request(method=method, host="127.0.0.1", path=path, body=body, port=4443))[1]

    comment = classified("POST", COMMENT, b'{"body": "one"}')
    assert classified("POST", COMMENT, b'{"body": "two"}') is comment  # remembered
    assert classified("GET", COMMENT) != comment  # another method: a read
    other = classified("POST", "/api/v3/repos/team/lib/issues/1/comments")
    assert getattr(other, "repo", None) == "team/lib"  # another path: another repository
    contents = "/api/v3/repos/team/app/contents/a.txt"
    main = classified("PUT", contents, b'{"message": "m", "content": "YQ==", "branch": "main"}')
    dev = classified("PUT", contents, b'{"message": "m", "content": "YQ==", "branch": "dev"}')
    assert main != dev  # a change is read from each body
    titled = classified("POST", "/api/v3/repos/team/app/issues", b'{"title": "one"}')
    assert classified("POST", "/api/v3/repos/team/app/issues", b'{"title": "two"}') != titled


def test_a_remembered_rest_classification_is_per_host() -> None:
    """The same method and path on the API host and on the web host are two surfaces."""
    from gitvow_github.adapter import GitHubAdapter

    adapter = GitHubAdapter()
    path = "/repos/team/app/issues/1/comments"
    api = adapter.classify(Request(method="POST", host="api.github.com", path=path, body=b"{}"))
    assert api.operations == ("issue.comment",)
    assert adapter.classify(Request(method="POST", host="api.github.com", path=path, body=b"[]")) is api
    web = adapter.classify(Request(method="POST", host="github.com", path=path, body=b"{}"))
    assert web.operations != ("issue.comment",)
