"""Each write is forwarded with its own header fields: the agent's credentials dropped wherever
they are, the forge's added once, whatever the writes before it carried. Run through the
proxy's addon chain on mitmproxy flows, as ``test_read_memo`` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_read_memo import Proxy, chain_under_policy, forwarded

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
