"""The identity addon on real mitmproxy flows: what a connection proved never proves another
connection or another header, and a reload (new secrets) proves again.

The identity check remembers proofs (per connection, and header values that proved an
identity under the policy in force) so a keep-alive connection or an agent's next
connection costs no base64 decoding; these tests hold that memory to what is sound.
"""

from __future__ import annotations

import base64
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import connection, http
from mitmproxy.test import taddons, tflow

from gitvow_proxy.addons.proxy_identity import ProxyIdentity, proxy_authorization
from gitvow_proxy.flow_metadata import APPROVAL_KEY, IDENTITY_KEY
from gitvow_proxy.identity import Identities
from gitvow_proxy.shared import Shared

HOST = "127.0.0.1:4443"


def _basic(user: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()


def _write_policy(path: Path, workdir: Path) -> None:
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}" = "github"
        [agents.bot]
        mode = "issues_and_prs"
        secret_env = "IDC_BOT_SECRET"
        [agents.other]
        mode = "advisory"
        secret_env = "IDC_OTHER_SECRET"
        [proxy]
        state = "{workdir / 'state.sqlite'}"
        [audit]
        path = "{workdir / 'audit.jsonl'}"
    """))


class Harness:
    def __init__(self, addon: ProxyIdentity, shared: Shared, reloader: Any, policy: Path) -> None:
        self.addon, self.shared, self.reloader, self.policy = addon, shared, reloader, policy

    def flow(self, client: connection.Client, header: str | None) -> http.HTTPFlow:
        flow = tflow.tflow(client_conn=client)
        flow.request = http.Request.make("GET", f"https://{HOST}/api/v3/repos/team/app/pulls", b"", [(b"Host", HOST.encode())])
        if header is not None:
            flow.request.headers["Proxy-Authorization"] = header
        return flow

    def who(self, flow: http.HTTPFlow) -> str | None:
        """Run the addon's two request hooks; the agent proven, or None (and then a 407)."""
        self.addon.requestheaders(flow)
        self.addon.request(flow)
        proven = flow.metadata.get(IDENTITY_KEY)
        if proven is None:
            assert flow.response is not None and flow.response.status_code == 407
            return None
        assert flow.response is None and proven[1] is self.shared.runtime
        return str(proven[0].name)

    def reload(self) -> None:
        self.reloader.reload()


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    from gitvow_proxy.addons import PolicyReload

    monkeypatch.setenv("IDC_BOT_SECRET", "bot-secret")
    monkeypatch.setenv("IDC_OTHER_SECRET", "other-secret")
    shared = Shared()
    reload, addon = PolicyReload(shared), ProxyIdentity(shared)
    policy = tmp_path / "policy.toml"
    _write_policy(policy, tmp_path)
    with taddons.context(reload, addon) as tctx:  # type: ignore[no-untyped-call]
        tctx.configure(reload, gitvow_policy=str(policy), confdir=str(tmp_path / "conf"))
        assert shared.runtime is not None
        yield Harness(addon, shared, reload, policy)
    shared.tally.stop()


def test_a_connection_proves_only_what_its_requests_carry(harness: Harness) -> None:
    one, two = tflow.tclient_conn(), tflow.tclient_conn()
    assert harness.who(harness.flow(one, _basic("bot", "bot-secret"))) == "bot"
    assert harness.who(harness.flow(one, _basic("bot", "bot-secret"))) == "bot"  # proven before, same answer
    # the same connection, another header: judged on its own, never on what was proven before
    assert harness.who(harness.flow(one, _basic("bot", "wrong"))) is None
    assert harness.who(harness.flow(one, _basic("other", "other-secret"))) == "other"
    assert harness.who(harness.flow(one, None)) is None  # no header and no CONNECT: nobody
    # another connection without a header never inherits the first one's identity
    assert harness.who(harness.flow(two, None)) is None
    assert harness.who(harness.flow(two, _basic("other", "bot-secret"))) is None


def test_a_tunnel_proves_the_requests_inside_it_only(harness: Harness) -> None:
    tunnel, elsewhere = tflow.tclient_conn(), tflow.tclient_conn()
    connect = harness.flow(tunnel, _basic("bot", "bot-secret"))
    connect.request.method = "CONNECT"
    harness.addon.http_connect(connect)
    assert connect.response is None
    assert harness.who(harness.flow(tunnel, None)) == "bot"
    assert harness.who(harness.flow(elsewhere, None)) is None
    harness.addon.client_disconnected(tunnel)
    assert harness.who(harness.flow(tunnel, None)) is None  # the connection's proof ends with it


def test_a_reload_proves_again(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    client = tflow.tclient_conn()
    old = _basic("bot", "bot-secret")
    assert harness.who(harness.flow(client, old)) == "bot"
    before = harness.shared.runtime
    monkeypatch.setenv("IDC_BOT_SECRET", "rotated-secret")
    harness.reload()
    assert harness.shared.runtime is not before
    # the same connection and header, proven under the old secrets: refused under the new ones
    assert harness.who(harness.flow(client, old)) is None
    assert harness.who(harness.flow(tflow.tclient_conn(), old)) is None
    assert harness.who(harness.flow(client, _basic("bot", "rotated-secret"))) == "bot"


def test_every_proof_is_checked_in_full() -> None:
    ids = Identities({"bot": "s3cret"})
    good, bad = _basic("bot", "s3cret"), _basic("bot", "guess")
    assert ids.authenticate(good) == ids.authenticate(good) is not None
    for _ in range(3):
        assert ids.authenticate(bad) is None
    assert ids.authenticate("Basic " + "  " + good.split(" ", 1)[1]) is not None  # padding spaces


def test_proxy_authorization_reads_like_mitmproxy() -> None:
    for fields in ([], [(b"Proxy-Authorization", b"Basic abc")], [(b"PROXY-AUTHORIZATION", b"x"), (b"proxy-authorization", b"y")],
                   [(b"Authorization", b"Basic abc")], [(b"proxy-authorization", b"caf\xc3\xa9 \xff")]):
        headers = http.Headers(fields)
        assert proxy_authorization(headers) == (headers.get("proxy-authorization") or "")


def test_the_caller_follows_the_policy_in_force(harness: Harness) -> None:
    """A reload that changes the agent's mode is judged with the new grant, and an approved
    replay is a caller of its own."""
    from gitvow.modes import Mode
    from gitvow_proxy.addons import PolicyEnforcement
    from gitvow_proxy.identity import Identity

    enforcement = PolicyEnforcement(harness.shared)
    flow = harness.flow(tflow.tclient_conn(), _basic("bot", "bot-secret"))

    def caller() -> Any:
        runtime = harness.shared.runtime
        assert runtime is not None
        return enforcement._inputs(runtime, flow, Identity("bot"))[1]

    first = caller()
    assert first.grant.mode is Mode.ISSUES_AND_PRS and not first.approved and caller() == first
    flow.metadata[APPROVAL_KEY] = ("an-approval", "bot")
    assert caller().approved
    del flow.metadata[APPROVAL_KEY]
    harness.policy.write_text(harness.policy.read_text().replace('mode = "issues_and_prs"', 'mode = "advisory"'))
    harness.reload()
    assert caller().grant.mode is Mode.ADVISORY
