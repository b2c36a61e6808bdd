"""``gitvow proxy`` as a real process in front of ``git-http-backend``, driven by the real
``git`` CLI and httpx: what arrives upstream, what never does, and what the agent is told.

A refusal of git smart-HTTP is in git's own protocol, so git prints it: a refused push
(``git-receive-pack`` POST) is a 200 report with every ref ``ng`` and the one-line denial on
a ``remote:`` line; a refused ``info/refs`` is an ``ERR`` packet, ``fatal: remote error: …``."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from proxy_support import GIT_TOKEN, GITVOW, SECRETS, ProxyProcess, Seen, Upstream, git

pytestmark = pytest.mark.e2e

INJECTED = "Basic " + base64.b64encode(f"x-access-token:{GIT_TOKEN}".encode()).decode()


def agent_env(proxy: ProxyProcess, agent: str, tmp_path: Path) -> dict[str, str]:
    """The agent's shell, exactly as ``gitvow env`` prints it."""
    out = subprocess.run(
        [GITVOW, "env", "--policy", str(proxy.policy), "--agent", agent, "--listen-port", str(proxy.port),
         "--confdir", str(proxy.confdir), "--json"],
        capture_output=True, text=True, check=True, env={**_secrets_env()},
    )
    env: dict[str, str] = json.loads(out.stdout)
    env["HOME"] = str(tmp_path)
    return env


def _secrets_env() -> dict[str, str]:
    import os

    return {
        **os.environ,
        "GITVOW_TEST_READER": SECRETS["reader"],
        "GITVOW_TEST_CODER": SECRETS["coder"],
        "GITVOW_TEST_LIMITED": SECRETS["limited"],
        "GITVOW_TEST_CONTROL_PLANE": SECRETS["control-plane"],
        "GITVOW_TEST_TALKER": SECRETS["talker"],
        "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN,
    }


def client(proxy: ProxyProcess, agent: str | None, ca_file: Path | None = None) -> httpx.Client:
    url = proxy.url(agent, SECRETS[agent]) if agent else proxy.url()
    return httpx.Client(proxy=url, verify=ssl.create_default_context(cafile=str(ca_file or proxy.ca)), timeout=30)


def reached(upstream: Upstream, fragment: str) -> list[Seen]:
    return [s for s in upstream.seen if fragment in s.path]


#: What git 2.39 appends to each ``remote:`` line when stderr is not a terminal.
REMOTE_SUFFIX = " " * 8


def packets(body: bytes) -> list[bytes | None]:
    """The payloads of ``body``'s pkt-lines (None for a flush)."""
    out: list[bytes | None] = []
    pos = 0
    while pos + 4 <= len(body):
        size = int(body[pos : pos + 4], 16)
        out.append(body[pos + 4 : pos + size] if size else None)
        pos += size or 4
    return out


def assert_git_error(response: httpx.Response, service: str, code: str) -> str:
    """A refused ``info/refs``: the service's advertisement holding only git's ``ERR`` packet
    with the one-line denial (``fatal: remote error: …`` in git); the line."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == f"application/x-{service}-advertisement"
    assert response.headers["x-gitvow-reason"] == code
    header, flush, err = packets(response.content)
    assert (header, flush) == (f"# service={service}\n".encode(), None)
    assert err is not None and err.startswith(b"ERR gitvow refused ") and err.endswith(f" reason={code}\n".encode())
    return err[4:-1].decode()


def git_push(work: Path, env: dict[str, str], *args: str, version: str = "0") -> subprocess.CompletedProcess[str]:
    return git("-c", f"protocol.version={version}", "push", *args, cwd=work, env=env, check=False)


def assert_one_line_denial(response: httpx.Response, code: str, status: int = 403) -> None:
    assert response.status_code == status, response.text
    assert response.headers["x-gitvow-reason"] == code
    text = response.text
    assert text.endswith("\n") and "\n" not in text[:-1], text
    assert text.rstrip().endswith(f"reason={code}"), text


def test_clone_goes_through_with_the_injected_token_and_not_the_agents(
    proxy: ProxyProcess, upstream: Upstream, tmp_path: Path
) -> None:
    upstream.clear()
    env = agent_env(proxy, "reader", tmp_path)
    before = len(proxy.audit_lines())
    git("clone", "-q", upstream.url("/team/app.git"), str(tmp_path / "app"), cwd=tmp_path, env=env)
    assert (tmp_path / "app" / "README.md").read_text() == "# team/app\n"
    fetches = reached(upstream, "/team/app.git/")
    assert fetches, upstream.paths()
    for seen in fetches:
        assert seen.headers.get("authorization") == INJECTED
        assert "proxy-authorization" not in seen.headers
    audit = [line for line in proxy.audit_lines() if line["agent"] == "reader" and line["repo"] == "team/app"]
    assert audit and all(line["verdict"] == "allow" and line["operations"] == ["git.fetch"] for line in audit)
    assert all(set(line) >= {"time", "host", "method", "path", "stage", "latency_ms", "reason"} for line in audit)
    # GIT_HTTP_PROXY_AUTHMETHOD=basic: git sends its proxy credentials at once, never a 407 first
    assert [line for line in proxy.audit_lines()[before:] if line.get("reason") == "proxy_auth"] == []


def test_agent_authorization_is_replaced_upstream(proxy: ProxyProcess, upstream: Upstream) -> None:
    upstream.clear()
    with client(proxy, "reader", None) as c:
        r = c.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack"),
                  headers={"Authorization": "token agent-own-token-xyz"})
    assert r.status_code == 200
    (seen,) = reached(upstream, "info/refs")
    assert seen.headers["authorization"] == INJECTED
    assert "agent-own-token-xyz" not in json.dumps(seen.headers)


def test_push_allowed_for_issues_and_prs(proxy: ProxyProcess, upstream: Upstream, tmp_path: Path) -> None:
    env = agent_env(proxy, "coder", tmp_path)
    work = tmp_path / "app"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)
    (work / "change.txt").write_text("a change\n")
    git("add", "change.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "change", cwd=work, env=env)
    upstream.clear()
    git("push", "-q", "origin", "HEAD:refs/heads/feature", cwd=work, env=env)
    pushes = reached(upstream, "/team/app.git/git-receive-pack")
    assert len(pushes) == 1 and pushes[0].headers["authorization"] == INJECTED
    heads = git("--git-dir", str(upstream.git_root / "team/app.git"), "branch", "--list", "feature", cwd=tmp_path)
    assert "feature" in heads.stdout


@pytest.mark.parametrize("version", ["0", "2"])
def test_push_denied_at_advisory_never_arrives(proxy: ProxyProcess, upstream: Upstream, tmp_path: Path,
                                               version: str) -> None:
    env = agent_env(proxy, "reader", tmp_path)
    work = tmp_path / "app"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)
    (work / "x.txt").write_text("x\n")
    git("add", "x.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "x", cwd=work, env=env)
    upstream.clear()
    result = git_push(work, env, "origin", "HEAD:refs/heads/nope", version=version)
    line = ("gitvow refused git.push on team/app (GET /team/app.git/info/refs): git.push needs mode issues_and_prs; "
            "agent has advisory; ask a human to do it or to raise this agent's mode. reason=mode_denied")
    assert (result.returncode, result.stderr) == (128, f"fatal: remote error: {line}\n")
    assert reached(upstream, "receive-pack") == [], upstream.paths()
    with client(proxy, "reader") as c:
        r = c.get(upstream.url("/team/app.git/info/refs?service=git-receive-pack"))
    assert assert_git_error(r, "git-receive-pack", "mode_denied") == line
    assert reached(upstream, "receive-pack") == []


@pytest.mark.parametrize("version", ["0", "2"])
def test_push_outside_the_write_surface_is_refused_at_info_refs(
    proxy: ProxyProcess, upstream: Upstream, tmp_path: Path, version: str
) -> None:
    env = agent_env(proxy, "talker", tmp_path)  # issues_and_prs, but its lane is issues only
    work = tmp_path / "app"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)  # git.fetch is exempt
    (work / "y.txt").write_text("y\n")
    git("add", "y.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "y", cwd=work, env=env)
    upstream.clear()
    result = git_push(work, env, "origin", "HEAD:refs/heads/lane", version=version)
    assert (result.returncode, result.stderr) == (128, (
        "fatal: remote error: gitvow refused git.push on team/app (GET /team/app.git/info/refs): git.push is outside "
        "this agent's write surface (lane talk); stay within your lane or ask a human. reason=write_surface_enforce\n"))
    assert reached(upstream, "receive-pack") == [], upstream.paths()  # not even the info/refs probe
    refused = [line for line in proxy.audit_lines() if line["agent"] == "talker" and line["verdict"] == "deny"]
    assert refused[-1]["reason"] == "write_surface_enforce" and refused[-1]["method"] == "GET"
    assert refused[-1]["path"].endswith("/info/refs")


def test_no_proxy_credentials_is_407_and_nothing_arrives(proxy: ProxyProcess, upstream: Upstream) -> None:
    upstream.clear()
    with client(proxy, None) as c, pytest.raises(httpx.ProxyError, match="407"):
        c.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack"))
    bad = httpx.Client(proxy=proxy.url("reader", "wrong"), verify=ssl.create_default_context(cafile=str(proxy.ca)))
    with bad, pytest.raises(httpx.ProxyError, match="407"):
        bad.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack"))
    assert upstream.seen == []


def test_paused_repository(proxy: ProxyProcess, upstream: Upstream) -> None:
    upstream.clear()
    with client(proxy, "coder") as c:
        r = c.get(upstream.url("/team/paused.git/info/refs?service=git-receive-pack"))
        fetch = c.get(upstream.url("/team/paused.git/info/refs?service=git-upload-pack"))
    assert assert_git_error(r, "git-receive-pack", "repo_paused") == (
        "gitvow refused git.push on team/paused (GET /team/paused.git/info/refs): team/paused is paused; wait until a "
        "human resumes the repository. reason=repo_paused")
    assert fetch.status_code == 200  # reading a paused repository is fine
    assert [s.path for s in upstream.seen] == ["/team/paused.git/info/refs?service=git-upload-pack"]


# git (curl) resolves plain "." and ".." itself before sending; the rest reach the proxy as typed.
@pytest.mark.parametrize("spelling", ["/team//paused.git", "/team/%2e/paused.git", "/team/x/%2E%2E/paused.git",
                                      "/team%2Fpaused.git"])
def test_a_push_by_a_non_canonical_path_is_refused_before_any_gate(
    proxy: ProxyProcess, upstream: Upstream, tmp_path: Path, spelling: str
) -> None:
    """``team//paused.git`` is ``team/paused`` to a server that merges slashes: the real git
    client pushes by it, and the proxy refuses the path itself, whatever repository it reads."""
    env = agent_env(proxy, "coder", tmp_path)
    work = tmp_path / "w"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)
    (work / "p.txt").write_text("p\n")
    git("add", "p.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "p", cwd=work, env=env)
    upstream.clear()
    result = git("push", upstream.url(spelling), "HEAD:refs/heads/sneak", cwd=work, env=env, check=False)
    assert result.returncode == 128, result.stderr
    assert result.stderr.startswith(f"fatal: remote error: gitvow refused unknown (GET {spelling}/info/refs): ")
    assert result.stderr.endswith(" reason=path_not_canonical\n"), result.stderr
    assert upstream.seen == [], upstream.paths()
    refused = [line for line in proxy.audit_lines() if line["agent"] == "coder" and line["verdict"] == "deny"]
    assert refused[-1]["reason"] == "path_not_canonical", refused[-1]
    with client(proxy, "coder") as c:
        r = c.get(upstream.url(f"{spelling}/info/refs?service=git-receive-pack"))
    assert_git_error(r, "git-receive-pack", "path_not_canonical")
    assert upstream.seen == []


def test_a_pattern_star_never_crosses_a_slash(proxy: ProxyProcess, upstream: Upstream) -> None:
    """``allowed_repos = ["team/*"]`` names ``team/app``, not ``team/sub/app`` (fnmatch did)."""
    upstream.clear()
    with client(proxy, "coder") as c:
        r = c.get(upstream.url("/team/sub/app.git/info/refs?service=git-upload-pack"))
    assert_git_error(r, "git-upload-pack", "repo_not_in_config")
    assert upstream.seen == []


@pytest.mark.parametrize("version", ["0", "2"])
def test_repository_outside_the_config(proxy: ProxyProcess, upstream: Upstream, tmp_path: Path, version: str) -> None:
    upstream.clear()
    with client(proxy, "coder") as c:
        r = c.get(upstream.url("/other/app.git/info/refs?service=git-upload-pack"))
    line = assert_git_error(r, "git-upload-pack", "repo_not_in_config")
    assert line == ("gitvow refused git.fetch on other/app (GET /other/app.git/info/refs): other/app is not a "
                    "repository this proxy serves; ask a human to add the repository. reason=repo_not_in_config")
    env = agent_env(proxy, "coder", tmp_path)
    cloned = git("-c", f"protocol.version={version}", "clone", upstream.url("/other/app.git"), "o",
                 cwd=tmp_path, env=env, check=False)
    assert (cloned.returncode, cloned.stderr) == (128, f"Cloning into 'o'...\nfatal: remote error: {line}\n")
    assert upstream.seen == []


def _push_body(ref: str) -> bytes:
    line = f"{'0' * 40} {'1' * 40} {ref}\0report-status\n".encode()
    return b"%04x" % (len(line) + 4) + line + b"0000"


def test_budget_per_operation_is_a_throttle_with_retry_after(proxy: ProxyProcess, upstream: Upstream) -> None:
    """A push over its budget is throttled in git's report (git prints no body of a 429): the
    client asked for no side-band, so the ``ng`` reason is the whole line, saying when the
    window frees; ``Retry-After`` is kept for clients that read it."""
    upstream.clear()
    url = upstream.url("/team/app.git/git-receive-pack")
    headers = {"Content-Type": "application/x-git-receive-pack-request"}
    with client(proxy, "limited") as c:
        first = c.post(url, content=_push_body("refs/heads/b1"), headers=headers)
        second = c.post(url, content=_push_body("refs/heads/b2"), headers=headers)
    assert first.status_code == 200 and "x-gitvow-reason" not in first.headers  # forwarded (git-http-backend
    # answers the bogus pack)
    assert second.status_code == 200 and second.headers["x-gitvow-reason"] == "write_budget"
    assert second.headers["content-type"] == "application/x-git-receive-pack-result"
    unpack, ng, flush = packets(second.content)
    assert (unpack, flush) == (b"unpack ok\n", None)
    assert ng is not None and ng.startswith(b"ng refs/heads/b2 gitvow refused git.push on team/app ")
    assert b"the write budget of 3600s is used up; wait " in ng and ng.endswith(b"reason=write_budget\n")
    assert 3500 <= int(second.headers["retry-after"]) <= 3600
    assert len(reached(upstream, "git-receive-pack")) == 1


@pytest.mark.parametrize("version", ["0", "2"])
def test_canary_in_a_pushed_file_is_refused(proxy: ProxyProcess, upstream: Upstream, tmp_path: Path,
                                            version: str) -> None:
    env = agent_env(proxy, "coder", tmp_path)
    canary = env["GH_TOKEN"]
    assert canary.startswith("gvc_")
    work = tmp_path / "app"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)
    (work / "leak.txt").write_text(f"my token is {canary}\n" + "padding line\n" * 200)
    git("add", "leak.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "innocent", cwd=work, env=env)
    upstream.clear()
    result = git_push(work, env, "origin", "HEAD:refs/heads/leak", version=version)
    url = upstream.url("/team/app.git")
    assert (result.returncode, result.stderr.splitlines()) == (1, [
        "remote: gitvow refused git.push on team/app (POST /team/app.git/git-receive-pack): the request carries a "
        f"secret that must never leave; remove the secret from what you send. reason=canary_egress{REMOTE_SUFFIX}",
        f"To {url}",
        " ! [remote rejected] HEAD -> leak (gitvow: canary_egress)",
        f"error: failed to push some refs to '{url}'",
    ])
    assert canary not in result.stderr
    assert reached(upstream, "/git-receive-pack") == [], upstream.paths()  # only the info/refs probe arrived
    assert any(line["reason"] == "canary_egress" for line in proxy.audit_lines())


def test_canary_made_only_by_a_delta_in_the_pushed_pack_is_refused(
    proxy: ProxyProcess, upstream: Upstream, tmp_path: Path
) -> None:
    """Two versions of a file pushed at once: the first splits the canary with a middle part,
    the second drops the middle. git sends the second as a delta copying around the middle,
    so the canary exists only once the delta is resolved against its base in the same pack."""
    env = agent_env(proxy, "coder", tmp_path)
    canary = env["GH_TOKEN"]
    half = len(canary) // 2
    filler = "".join(f"line {i} of a file that stays the same\n" for i in range(300))
    work = tmp_path / "app"
    git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=env)
    (work / "notes.txt").write_text(filler + canary[:half] + "\n" + "MIDDLE PART " * 40 + "\n" + canary[half:] + "\n")
    git("add", "notes.txt", cwd=work, env=env)
    git("commit", "-q", "-m", "notes", cwd=work, env=env)
    (work / "notes.txt").write_text(filler + canary + "\n")
    git("commit", "-q", "-am", "tidy", cwd=work, env=env)
    upstream.clear()
    result = git("push", "origin", "HEAD:refs/heads/delta-leak", cwd=work, env=env, check=False)
    assert result.returncode == 1, result.stderr
    assert " ! [remote rejected] HEAD -> delta-leak (gitvow: canary_egress)" in result.stderr.splitlines()
    assert reached(upstream, "/git-receive-pack") == [], upstream.paths()
    assert proxy.audit_lines()[-1]["reason"] == "canary_egress"


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: t.encode(),
        lambda t: base64.b64encode(b"xx" + t.encode()),
        lambda t: ("%" + "%".join(f"{b:02x}" for b in t.encode())).encode(),
        lambda t: ('{"body": "' + "".join(f"\\u{ord(c):04x}" for c in t) + '"}').encode(),
    ],
    ids=["plain", "base64", "url", "json-escaped"],
)
def test_canary_in_a_body_in_any_spelling(proxy: ProxyProcess, upstream: Upstream, tmp_path: Path, encode: object) -> None:
    canary = agent_env(proxy, "coder", tmp_path)["GH_TOKEN"]
    assert callable(encode)
    url = upstream.url("/team/app.git/git-upload-pack")
    upstream.clear()
    with client(proxy, "coder") as c:
        control = c.post(url, content=b"0000" + encode("gvc_" + "0" * 32))
        r = c.post(url, content=b"0000" + encode(canary))
    assert control.headers.get("x-gitvow-reason") is None  # the same shape without the canary passes
    assert_one_line_denial(r, "canary_egress")
    assert canary not in r.text
    assert len(upstream.seen) == 1


def test_an_adapter_that_raises_is_a_deny_and_the_proxy_keeps_serving(
    proxy: ProxyProcess, upstream: Upstream
) -> None:
    upstream.clear()
    with client(proxy, "coder") as c:
        r = c.get(f"https://localhost:{upstream.port}/team/app.git/info/refs?service=git-upload-pack")
        after = c.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack"))
    assert_one_line_denial(r, "internal_error")
    assert after.status_code == 200
    assert [s.path for s in upstream.seen] == ["/team/app.git/info/refs?service=git-upload-pack"]
    assert "adapter 'broken' (plugin 'test-broken') raised" in proxy.log_text()


def test_internal_identity_skips_agent_gates(proxy: ProxyProcess, upstream: Upstream) -> None:
    upstream.clear()
    with client(proxy, "control-plane") as c:
        r = c.get(upstream.url("/team/paused.git/info/refs?service=git-receive-pack"))
    assert r.status_code == 200
    assert reached(upstream, "git-receive-pack")


def test_injected_token_never_reaches_the_agent(proxy: ProxyProcess, upstream: Upstream) -> None:
    def echo(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        auth = seen.headers.get("authorization", "")
        credential = auth.split(" ", 1)[-1]  # without its scheme, as an error page might quote it
        return (302, {"Location": f"https://elsewhere.test/?t={credential}", "X-Echo": auth},
                f"you sent {auth} / {GIT_TOKEN} / {credential}".encode())

    upstream.routes["/team/app.git/info/refs"] = echo
    try:
        with client(proxy, "reader") as c:
            r = c.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack"))
    finally:
        del upstream.routes["/team/app.git/info/refs"]
    leaked = [GIT_TOKEN, INJECTED.split()[1]]
    everything = r.text + json.dumps(dict(r.headers))
    assert r.status_code == 302
    assert not any(secret in everything for secret in leaked), everything
    assert "[redacted by gitvow]" in r.text
    assert GIT_TOKEN not in proxy.log_text() and GIT_TOKEN not in proxy.audit.read_text()
    for secret in SECRETS.values():
        assert secret not in proxy.audit.read_text()


def test_audit_has_one_line_per_decision(proxy: ProxyProcess, upstream: Upstream) -> None:
    before = len(proxy.audit_lines())
    with client(proxy, "coder") as c:
        c.get(upstream.url("/team/app.git/info/refs?service=git-upload-pack&token=sekrit"))
        c.get(upstream.url("/other/app.git/info/refs?service=git-upload-pack"))
    time.sleep(0.2)
    lines = proxy.audit_lines()[before:]
    decisions = [line for line in lines if line["stage"] != "host"]
    assert [(d["verdict"], d["reason"]) for d in decisions] == [("allow", None), ("deny", "repo_not_in_config")]
    assert all("sekrit" not in json.dumps(d) for d in lines)
