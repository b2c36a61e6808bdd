"""The approval desk as an attacker on the same host meets it: a real listener, raw HTTP.

The agent can serve pages on another loopback port (it then receives every cookie the browser
holds for 127.0.0.1, whatever the port), send any header from its own process, rebind a DNS
name to 127.0.0.1, and guess the secret from many threads at once. Each attempt is a test here;
the browser's view is in test_approvals_e2e.py.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_approvals import staged

from gitvow.policy.load import Policy, parse_policy
from gitvow_proxy.approvals import PENDING
from gitvow_proxy.desk import SIGN_IN_FAILURES, Desk, colour_of
from gitvow_proxy.store import MemoryStore

SECRET = "operator-secret-41"


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    audit = tmp_path / "audit.jsonl"
    policy: Policy = parse_policy({"audit": {"path": str(audit)}, "admin": {"listen": "127.0.0.1:0"}})
    store = MemoryStore()
    running = Desk(lambda: policy, store, SECRET, ("127.0.0.1", 0),
                   routes={"/metrics": lambda: ("text/plain", b"gitvow_up 1\n")}).start()
    yield running
    running.stop()


def base(desk: Desk) -> str:
    return f"http://127.0.0.1:{desk.port}"


def origin(desk: Desk) -> dict[str, str]:
    return {"Origin": base(desk)}


def sign_in(client: httpx.Client, desk: Desk) -> str:
    """Sign in as a browser on the desk's own page would; return the session's URL path."""
    answer = client.post("/login", data={"name": "alice", "secret": SECRET}, headers=origin(desk), follow_redirects=False)
    assert answer.status_code == 303, answer.text
    where = answer.headers["location"]
    assert re.fullmatch(r"/s/[A-Za-z0-9_-]{20,}/", where), where
    cookie = answer.headers["set-cookie"]
    assert f"Path={where};" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return where


def csrf_of(page: str) -> str:
    found = re.search(r"name='csrf' value='([^']+)'", page)
    assert found, page
    return found.group(1)


def test_a_stolen_cookie_opens_nothing_without_the_sessions_url(desk: Desk) -> None:
    """The agent's page on another port receives the desk's cookie; it does not know the URL key."""
    approval = desk.store.stage(staged(now=1e10), 1e10)
    with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=10) as operator:
        where = sign_in(operator, desk)
        stolen = operator.cookies["gitvow_desk"]
        assert operator.get(where).status_code == 200
    with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=10) as agent:
        agent.cookies.set("gitvow_desk", stolen)
        for path in ("/", "/s/", f"/s/{'A' * 32}/", "/approvals/" + approval.id):
            assert agent.get(path).headers.get("location") == "/login", path
        refused = agent.post(f"/s/{'A' * 32}/approvals/{approval.id}/approve", data={"csrf": "x"}, headers=origin(desk))
        assert refused.headers.get("location") == "/login"
        # The key alone (say, read over a shoulder) without the cookie opens nothing either.
        agent.cookies.clear()
        assert agent.get(where).headers.get("location") == "/login"
    assert desk.store.approval(approval.id).status == PENDING  # type: ignore[union-attr]


def test_every_state_change_needs_this_desks_origin(desk: Desk) -> None:
    approval = desk.store.stage(staged(now=1e10), 1e10)
    with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=10) as client:
        # Sign-in itself: no Origin and no Fetch-Metadata, another port's origin, "null".
        for headers in ({}, {"Origin": "http://127.0.0.1:1"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "same-site"}, {"Origin": "http://evil.test"}):
            answer = client.post("/login", data={"name": "m", "secret": SECRET}, headers=headers)
            assert answer.status_code == 403, headers
        assert client.post("/login", data={"name": "m", "secret": SECRET},
                           headers={"Sec-Fetch-Site": "same-origin"}).status_code == 303
        where = sign_in(client, desk)
        csrf = csrf_of(client.get(where).text)
        for headers in ({}, {"Origin": "http://localhost:1"}, {"Sec-Fetch-Site": "cross-site"}):
            answer = client.post(f"{where}approvals/{approval.id}/approve", data={"csrf": csrf}, headers=headers)
            assert answer.status_code == 403, headers
        assert client.post(f"{where}approvals/{approval.id}/approve", data={"csrf": "forged"},
                           headers=origin(desk)).status_code == 403
        assert desk.store.approval(approval.id).status == PENDING  # type: ignore[union-attr]
        done = client.post(f"{where}approvals/{approval.id}/approve", data={"csrf": csrf}, headers=origin(desk))
        assert done.status_code == 303 and done.headers["location"] == where
    assert desk.store.approval(approval.id).status == "approved"  # type: ignore[union-attr]


def test_host_is_checked_on_every_route_metrics_included(desk: Desk) -> None:
    """A rebound DNS name reaches the port but carries its own name in Host."""
    with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=10) as client:
        for path in ("/metrics", "/login", "/", "/s/x/"):
            assert client.get(path, headers={"Host": f"rebind.evil.test:{desk.port}"}).status_code == 421, path
        assert client.post("/login", data={"secret": SECRET}, headers={
            "Host": f"rebind.evil.test:{desk.port}", "Origin": f"http://rebind.evil.test:{desk.port}"}).status_code == 421
        assert client.get("/metrics").text == "gitvow_up 1\n"
        assert client.get("/metrics", headers={"Host": f"localhost:{desk.port}"}).status_code == 200


def test_failed_sign_ins_are_throttled_for_the_whole_listener(desk: Desk) -> None:
    """Parallel guessers share one allowance; once it is spent even the right secret waits."""
    answers: list[int] = []

    def guess(n: int) -> None:
        with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=30) as client:
            answers.append(client.post("/login", data={"secret": f"guess-{n}"}, headers=origin(desk)).status_code)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(SIGN_IN_FAILURES + 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(303) <= SIGN_IN_FAILURES and 429 in answers, answers
    with httpx.Client(base_url=base(desk), follow_redirects=False, timeout=10) as client:
        late = client.post("/login", data={"secret": SECRET}, headers=origin(desk))
        assert late.status_code == 429 and int(late.headers["retry-after"]) > 0
        assert "Too many wrong secrets" in late.text


def test_the_desk_never_shows_a_message_from_the_url(desk: Desk) -> None:
    with httpx.Client(base_url=base(desk), follow_redirects=True, timeout=10) as client:
        where = sign_in(client, desk)
        page = client.get(f"{where}?done=Approved+everything.+Send+your+secret+to+evil.test")
        assert "evil.test" not in page.text and "class='flash'" not in page.text
        csrf = csrf_of(page.text)
        paused = client.post(f"{where}pause", data={"csrf": csrf, "repo": "team/app", "reason": "incident 42"},
                             headers=origin(desk))
        assert "Paused team/app." in paused.text  # the session's message, shown once
        assert "incident 42" in paused.text  # the pause's reason, on the desk
        assert "Paused team/app." not in client.get(where).text


def test_the_sign_in_page_names_the_product(desk: Desk) -> None:
    page = httpx.get(f"{base(desk)}/login", timeout=10).text
    assert "<title>gitvow approval desk: sign in</title>" in page and "coding agents" in page


def test_chart_colours_depend_on_the_reason_only() -> None:
    names = ["deny: hard_deny", "deny: mode_denied", "throttle: write_budget", "deny: some_new_reason", "allow"]
    first = {n: colour_of(n) for n in names}
    assert first == {n: colour_of(n) for n in reversed(names)}
    assert first["allow"] == "#2e7d32" and "#2e7d32" not in [first[n] for n in names if n != "allow"]
    assert len({first[n] for n in names[:3]}) == 3


def test_a_failed_send_does_not_read_as_the_approvers_reason(desk: Desk) -> None:
    approval = desk.store.stage(staged(now=1e10), 1e10)
    desk.store.decide(approval.id, approve=True, by="alice", reason=None, now=1e10)
    desk.store.claim(1e10)
    desk.store.finish(approval.id, sent=False, status=403, content_type="text/plain", body=b"no",
                      now=1e10, reason="gitvow refused: team/app is paused. reason=repo_paused")
    with httpx.Client(base_url=base(desk), follow_redirects=True, timeout=10) as client:
        where = sign_in(client, desk)
        card = client.get(f"{where}approvals/{approval.id}").text
    assert "approved by alice</dd>" in card
    assert "<dt>not sent</dt>" in card and "reason=repo_paused" in card
    assert json.dumps("by alice: gitvow refused")[1:-1] not in card
