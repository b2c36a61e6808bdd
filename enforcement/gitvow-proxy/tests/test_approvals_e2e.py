"""The approval path end to end: real clients (``gh``, PyGithub, curl, python-gitlab) through a
``gitvow proxy`` process to a loopback TLS GHES (and GitLab) stand-in that records what
arrives; a human decides with the ``gitvow approvals`` CLI, which never sees the forge token.

Also here: refusals in the shape each client prints, and ``gitvow pause``/``resume``/``status``
taking effect on the next request without a restart.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import ssl
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from proxy_support import (
    GIT_TOKEN,
    GITVOW,
    RESOLVE_ADDON,
    ProxyProcess,
    Seen,
    Upstream,
    proxy_env,
    start_proxy,
    start_upstream,
)
from test_github_e2e import HOST, agent_env, gh

from gitvow.testing import free_port

pytestmark = pytest.mark.e2e

GITLAB = "gitlab.test"
ADMIN_SECRET = "desk-operator-secret-7"
ID = re.compile(r"approval ([0-9A-Z]{6})")

REPO = {"id": "R_1", "name": "app", "owner": {"login": "team"}, "hasIssuesEnabled": True, "description": "",
        "hasWikiEnabled": False, "viewerPermission": "WRITE", "defaultBranchRef": {"name": "main"}, "parent": None,
        "mergeCommitAllowed": True, "rebaseMergeAllowed": True, "squashMergeAllowed": True}


def _graphql(upstream: Upstream, seen: Seen) -> object:
    query = json.loads(seen.body).get("query", "")
    base = f"https://{HOST}:{upstream.port}"
    if "RepositoryInfo" in query:
        return {"data": {"repository": REPO}}
    if "PullRequestForBranch" in query:
        return {"data": {"repository": {"pullRequests": {"nodes": []}, "defaultBranchRef": {"name": "main"}}}}
    if "createPullRequest" in query:
        return {"data": {"createPullRequest": {"pullRequest": {"id": "PR_7", "url": f"{base}/team/app/pull/7"}}}}
    if "createIssue" in query:
        return {"data": {"createIssue": {"issue": {"id": "I_1", "url": f"{base}/team/app/issues/3"}}}}
    return {"data": {"viewer": {"login": "agent"}}}


def _api(upstream: Upstream, seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Just enough of GitHub's and GitLab's answers for gh, PyGithub, curl and python-gitlab."""
    base = f"https://{HOST}:{upstream.port}/api/v3"
    path = seen.route
    status = 200
    data: object
    if path == "/api/graphql":
        data = _graphql(upstream, seen)
    elif path == "/api/v3/repos/team/app":
        data = {"id": 1, "name": "app", "full_name": "team/app", "owner": {"login": "team"}, "url": f"{base}/repos/team/app"}
    elif path == "/api/v3/repos/team/app/pulls/1" and seen.method == "GET":
        data = {"id": 101, "number": 1, "title": "a change", "state": "open", "url": f"{base}/repos/team/app/pulls/1"}
    elif path == "/api/v3/repos/team/app/pulls/1/merge":
        data = {"sha": "0123abcd", "merged": True, "message": "Pull Request successfully merged"}
    elif path == "/api/v3/repos/team/app/pulls" and seen.method == "POST":
        status, data = 201, {"number": 8, "html_url": f"https://{HOST}:{upstream.port}/team/app/pull/8"}
    elif path.startswith("/api/v4/"):
        status = 201 if seen.method == "POST" else 200
        data = {"id": 1, "iid": 7, "title": "t", "state": "opened", "project_id": 1}
    else:
        status = 201 if seen.method == "POST" else 200
        data = {"id": 5, "method": seen.method, "path": seen.path}
    return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


@pytest.fixture(scope="module")
def forge(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    server = start_upstream(ca, tmp_path_factory.mktemp("forge-root"), names=(HOST, GITLAB))
    server.routes["/api/"] = lambda seen: _api(server, seen)
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def proxy(forge: Upstream, ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    running = _start(forge, ca_file, broken_plugin_path, tmp_path_factory.mktemp("approvals"), ttl=3600)
    yield running
    assert running.stop() == 0, running.log_text()


def _start(forge: Upstream, ca_file: Path, broken_plugin_path: Path, workdir: Path, *, ttl: int,
           extra: str = "") -> ProxyProcess:
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    # The GitLab adapter is there in the `all` environment; the proxy's own runs without it.
    has_gitlab = importlib.util.find_spec("gitvow_gitlab") is not None
    gitlab_host = f'"{GITLAB}:{forge.port}" = "gitlab"' if has_gitlab else ""
    gitlab_credentials = '[credentials.gitlab]\ntoken_env = "GITVOW_TEST_GIT_TOKEN"\n' if has_gitlab else ""
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}:{forge.port}" = "github"
        {gitlab_host}

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [approvals]
        ttl = {ttl}
        poll_interval = 0.2

        [admin]
        listen = "127.0.0.1:{free_port()}"
        secret_env = "GITVOW_TEST_ADMIN"

        [issue_shape]
        body_min = 20

        [agents.reader]
        mode = "advisory"
        secret_env = "GITVOW_TEST_READER"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
    """) + gitlab_credentials + extra)
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": f"{HOST},{GITLAB}", "GITVOW_TEST_ADMIN": ADMIN_SECRET}
    return start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])


def gitvow(proxy: ProxyProcess, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The operator's CLI, with no forge token and no agent secret in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(proxy.policy)], capture_output=True, text=True, env=env,
                          timeout=timeout)


def approval_id(text: str) -> str:
    found = ID.search(text)
    assert found, text
    return found.group(1)


def sent(forge: Upstream, marker: bytes) -> list[Seen]:
    return [s for s in forge.seen if marker in s.body or marker.decode() in s.path]


def gh_pr_create(proxy: ProxyProcess, forge: Upstream, home: Path, title: str) -> subprocess.CompletedProcess[str]:
    return gh(proxy, forge, "coder", home, "pr", "create", "-R", f"{HOST}:{forge.port}/team/app", "--head", "feature",
              "--base", "main", "--title", title, "--body", "Adds the thing. Tested locally.")


# -- the approval path ------------------------------------------------------------------------

def test_gh_pr_create_is_staged_approved_sent_once_and_answered_again(
    proxy: ProxyProcess, forge: Upstream, tmp_path: Path
) -> None:
    forge.clear()
    refused = gh_pr_create(proxy, forge, tmp_path, "Add the thing")
    assert refused.returncode != 0
    assert "reason=hard_deny" in refused.stderr and "staged for a human as approval" in refused.stderr, refused.stderr
    ident = approval_id(refused.stderr)
    assert f"gitvow approvals wait {ident}" in refused.stderr
    # GraphQL's refusal as GitHub answers one (200, errors): gh prints the line, not escaped JSON
    assert f"pull request create failed: GraphQL: gitvow refused pr.create (POST /api/graphql): pr.create needs a human's approval; staged for a " \
           f"human as approval {ident}; it is sent once approved: `gitvow approvals wait {ident}` (or send the same " \
           "request again for its result). reason=hard_deny" in refused.stderr.splitlines(), refused.stderr
    assert sent(forge, b"createPullRequest") == []

    again = gh_pr_create(proxy, forge, tmp_path, "Add the thing")  # the same request while pending: the same id
    assert approval_id(again.stderr) == ident

    listed = gitvow(proxy, "approvals", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (mine,) = [a for a in json.loads(listed.stdout) if a["id"] == ident]
    assert (mine["agent"], mine["operations"], mine["status"]) == ("coder", ["pr.create"], "pending")
    assert mine["summary"]["title"] == "Add the thing" and mine["summary"]["head"] == "feature"
    shown = gitvow(proxy, "approvals", "show", ident)
    assert "title       Add the thing" in shown.stdout and "base        main" in shown.stdout, shown.stdout

    approved = gitvow(proxy, "approvals", "approve", ident, "--by", "alice")
    assert approved.returncode == 0, approved.stderr
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert waited.stdout.splitlines()[0] == f"https://{HOST}:{forge.port}/team/app/pull/7"
    (creation,) = sent(forge, b"createPullRequest")
    assert creation.headers["authorization"] == f"Bearer {GIT_TOKEN}"
    assert b"Add the thing" in creation.body and "gvc_" not in json.dumps(creation.headers)

    retry = gh_pr_create(proxy, forge, tmp_path, "Add the thing")  # after the send: the recorded answer
    assert retry.returncode == 0, retry.stderr
    assert f"https://{HOST}:{forge.port}/team/app/pull/7" in retry.stdout
    assert len(sent(forge, b"createPullRequest")) == 1

    steps = [(line["verdict"], line.get("by")) for line in proxy.audit_lines() if line.get("approval") == ident]
    assert steps[0] == ("staged", None) and ("approved", "alice") in steps and ("sent", None) in steps
    assert ("answered", None) in steps


def test_pygithub_merge_is_staged_then_sent_once(
    proxy: ProxyProcess, forge: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gh_lib = pytest.importorskip("github")
    env = agent_env(proxy, "coder", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = gh_lib.Github(base_url=f"https://{HOST}:{forge.port}/api/v3", auth=gh_lib.Auth.Token(env["GH_TOKEN"]),
                           retry=None)
    forge.clear()
    pull = client.get_repo("team/app").get_pull(1)
    with pytest.raises(gh_lib.GithubException) as refused:
        pull.merge(merge_method="squash")
    assert refused.value.status == 403 and refused.value.headers["x-gitvow-reason"] == "hard_deny"
    message = refused.value.data["message"]  # PyGithub shows GitHub's JSON message
    assert message.startswith("gitvow refused pr.merge on team/app") and message.endswith("reason=hard_deny")
    ident = refused.value.headers["x-gitvow-approval"]
    assert ident in message
    assert sent(forge, b"/merge") == []

    assert "merge method" in gitvow(proxy, "approvals", "show", ident).stdout
    assert gitvow(proxy, "approvals", "approve", ident).returncode == 0
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0 and "Pull Request successfully merged" in waited.stdout, waited.stdout + waited.stderr
    (merge,) = [s for s in forge.seen if s.route.endswith("/pulls/1/merge")]
    assert merge.method == "PUT" and merge.headers["authorization"] == f"Bearer {GIT_TOKEN}"
    assert json.loads(merge.body)["merge_method"] == "squash"

    status = pull.merge(merge_method="squash")  # the identical retry: the recorded answer
    assert status.merged is True
    assert len([s for s in forge.seen if s.route.endswith("/pulls/1/merge")]) == 1


def test_a_rejected_request_is_never_sent(proxy: ProxyProcess, forge: Upstream, tmp_path: Path) -> None:
    env = {**agent_env(proxy, "coder", tmp_path), "HOME": str(tmp_path)}
    url = f"https://{HOST}:{forge.port}/api/v3/repos/team/app/pulls"
    body = json.dumps({"title": "Risky", "head": "risky", "base": "main"})
    curl = ["curl", "-sS", "--suppress-connect-headers", "--http1.1", "-X", "POST", url, "-H", f"Authorization: Bearer {env['GH_TOKEN']}",
            "-H", "Content-Type: application/json", "--data", body, "-D", "-"]
    forge.clear()
    first = subprocess.run(curl, capture_output=True, text=True, env=env, timeout=60)
    assert " 403" in first.stdout.splitlines()[0], first.stdout + first.stderr
    ident = approval_id(first.stdout)
    rejected = gitvow(proxy, "approvals", "reject", ident, "--reason", "not this week")
    assert rejected.returncode == 0, rejected.stderr
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "10")
    assert waited.returncode == 1 and "rejected by" in waited.stderr and "not this week" in waited.stderr
    retry = subprocess.run(curl, capture_output=True, text=True, env=env, timeout=60)
    assert "x-gitvow-reason: approval_rejected" in retry.stdout.lower()
    assert json.loads(retry.stdout.split("\n\n", 1)[1])["message"].endswith("reason=approval_rejected")
    assert "not this week" in retry.stdout
    assert [s for s in forge.seen if s.method == "POST"] == []
    assert gitvow(proxy, "approvals", "approve", ident).returncode == 2  # decided once


def test_an_unanswered_approval_expires(forge: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path) -> None:
    """[approvals] ttl: the sender marks it expired; the agent's retry is refused with approval_expired,
    and the one after that stages a fresh approval."""
    import time

    (tmp_path / "short").mkdir()
    short = _start(forge, ca_file, broken_plugin_path, tmp_path / "short", ttl=1)
    try:
        first = _agent_post(short, forge, tmp_path, "Expires")
        deadline = time.monotonic() + 20
        while '"status": "expired"' not in gitvow(short, "approvals", "show", first["id"], "--json").stdout:
            assert time.monotonic() < deadline, "the approval never expired"
            time.sleep(0.3)
        assert gitvow(short, "approvals", "approve", first["id"]).returncode == 2
        expired = _agent_post(short, forge, tmp_path, "Expires")
        assert expired["id"] == first["id"] and expired["message"].endswith("reason=approval_expired")
        fresh = _agent_post(short, forge, tmp_path, "Expires")
        assert fresh["id"] != first["id"] and fresh["message"].endswith("reason=hard_deny")
        steps = [line["verdict"] for line in short.audit_lines() if line.get("approval") == first["id"]]
        assert steps[0] == "staged" and "expired" in steps
    finally:
        assert short.stop() == 0, short.log_text()


def test_an_approved_request_still_passes_the_gates_that_apply(proxy: ProxyProcess, forge: Upstream,
                                                               tmp_path: Path) -> None:
    """Approved while its repository is paused: not sent; the failure is recorded, and `wait` says why."""
    ident = _agent_post(proxy, forge, tmp_path, "Paused meanwhile")["id"]
    forge.clear()
    assert gitvow(proxy, "pause", "team/app").returncode == 0
    try:
        assert gitvow(proxy, "approvals", "approve", ident).returncode == 0
        waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    finally:
        assert gitvow(proxy, "resume", "team/app").returncode == 0
    assert waited.returncode == 1 and "failed" in waited.stderr and "reason=repo_paused" in waited.stderr, waited.stderr
    assert [s for s in forge.seen if s.method == "POST"] == []
    steps = [line["verdict"] for line in proxy.audit_lines() if line.get("approval") == ident]
    assert "send_failed" in steps and "sent" not in steps


# -- refusals in each client's shape ------------------------------------------------------------

def test_gh_issue_create_refused_for_its_shape_prints_the_line(
    proxy: ProxyProcess, forge: Upstream, tmp_path: Path
) -> None:
    forge.clear()
    result = gh(proxy, forge, "coder", tmp_path, "issue", "create", "-R", f"{HOST}:{forge.port}/team/app",
                "--title", "bug", "--body", "short")
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "gitvow refused issue.create" in line]
    assert lines and "reason=issue_shape" in lines[0], result.stderr
    assert "shorter than 20 characters" in lines[0]
    assert sent(forge, b"createIssue") == []


def test_gh_api_graphql_refused_by_mode_prints_the_line(proxy: ProxyProcess, forge: Upstream, tmp_path: Path) -> None:
    result = gh(proxy, forge, "reader", tmp_path, "api", "graphql", "-f",
                'query=mutation { addComment(input: {subjectId: "I1", body: "x"}) { clientMutationId } }')
    assert result.returncode != 0
    assert "gitvow refused issue.comment" in result.stderr, result.stderr
    assert re.search(r"reason=(graphql_mutation|mode_denied)", result.stderr)
    assert "403 Forbidden" not in result.stderr


def test_python_gitlab_prints_the_line(proxy: ProxyProcess, forge: Upstream, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gitvow_gitlab", reason="the GitLab adapter plugin is not installed")
    gitlab = pytest.importorskip("gitlab")
    env = agent_env(proxy, "reader", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    gl = gitlab.Gitlab(f"https://{GITLAB}:{forge.port}", private_token=env["GITLAB_TOKEN"], retry_transient_errors=False)
    forge.clear()
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as refused:
        gl.projects.get("team/app", lazy=True).issues.create({"title": "a bug", "description": "x" * 40})
    assert refused.value.response_code == 403
    assert refused.value.error_message.startswith("gitvow refused issue.create on team/app")
    assert refused.value.error_message.endswith("reason=mode_denied")
    assert forge.seen == []


# -- run-time control ---------------------------------------------------------------------------

def test_pause_and_resume_take_effect_on_the_next_request(proxy: ProxyProcess, forge: Upstream, tmp_path: Path) -> None:
    comment = ("api", "-X", "POST", "repos/team/app/issues/1/comments", "-f", "body=hello there")
    forge.clear()
    assert gh(proxy, forge, "coder", tmp_path, *comment).returncode == 0
    assert gitvow(proxy, "pause", "team/app", "--reason", "incident").returncode == 0
    paused = gh(proxy, forge, "coder", tmp_path, *comment)
    assert paused.returncode != 0 and "reason=repo_paused" in paused.stderr, paused.stderr
    status = json.loads(gitvow(proxy, "status", "--json").stdout)
    assert status["paused"] == {"team/app": "run time"}
    assert any(r["reason"] == "repo_paused" for r in status["recent_refusals"])
    assert {a["agent"]: a["mode"] for a in status["agents"]} == {"coder": "issues_and_prs", "reader": "advisory"}
    assert gitvow(proxy, "resume", "team/app").returncode == 0
    assert gh(proxy, forge, "coder", tmp_path, *comment).returncode == 0
    assert len([s for s in forge.seen if s.method == "POST"]) == 2


def test_the_audit_log_replays_each_approval_as_one_request(proxy: ProxyProcess, forge: Upstream,
                                                            tmp_path: Path) -> None:
    """The proxy's own audit log — approval steps, the proxy's send, an answered retry, an
    operator's pause — replays under the same policy with no change, one request per request
    an agent sent."""
    refused = gh_pr_create(proxy, forge, tmp_path, "Replay the thing")
    ident = approval_id(refused.stderr)
    assert gitvow(proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    assert gitvow(proxy, "approvals", "wait", ident, "--timeout", "30").returncode == 0
    assert gh_pr_create(proxy, forge, tmp_path, "Replay the thing").returncode == 0  # answered from the record
    assert gitvow(proxy, "pause", "team/app").returncode == 0
    assert gitvow(proxy, "resume", "team/app").returncode == 0
    lines = proxy.audit_lines()
    steps = [line["verdict"] for line in lines if line.get("approval") == ident]
    assert steps[0] == "staged" and "sent" in steps and "answered" in steps
    assert any(line["verdict"] == "paused" for line in lines)
    decisions = [line for line in lines if "approval" not in line and line["method"] not in ("-", "STREAM")]
    staged = {line["approval"] for line in lines if line.get("verdict") == "staged"}
    sends = {line["approval"] for line in lines if line.get("verdict") in ("sent", "send_failed")} & staged
    answered = [line for line in lines if line.get("verdict") == "answered"]
    proc = subprocess.run([GITVOW, "replay", "--json", "--policy", str(proxy.policy), str(proxy.audit)],
                          capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout) if proc.stdout else {}
    assert proc.returncode == 0, (proc.stderr, report.get("groups"), lines)
    assert report["changed"] == 0, report["groups"]
    # each approved request's send by the proxy is part of the agent's request, not one of its own
    assert report["requests"] == len(decisions) - len(sends) + len(answered)


def test_the_proxy_says_where_its_state_and_audit_are(proxy: ProxyProcess) -> None:
    text = proxy.log_text()
    assert f"state store {Path(proxy.policy).parent / 'state.sqlite'}" in text
    assert f"audit log {proxy.audit}" in text
    assert "approval desk at http://127.0.0.1:" in text


def desk_url(proxy: ProxyProcess) -> str:
    found = re.search(r"approval desk at (http://127\.0\.0\.1:\d+/)", proxy.log_text())
    assert found, proxy.log_text()
    return found.group(1)


def _agent_post(proxy: ProxyProcess, forge: Upstream, home: Path, title: str) -> dict[str, Any]:
    import httpx

    env = agent_env(proxy, "coder", home)
    url = f"https://{HOST}:{forge.port}/api/v3/repos/team/app/pulls"
    context = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    with httpx.Client(proxy=env["HTTPS_PROXY"], verify=context, timeout=30) as client:
        answer = client.post(url, json={"title": title, "body": "Why: the desk test.", "head": "desk", "base": "main"})
    assert answer.status_code == 403
    return {"id": answer.headers["x-gitvow-approval"], "message": answer.json()["message"]}


# -- the approval desk ------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_the_desk_in_a_browser_signs_in_shows_and_approves_once(
    proxy: ProxyProcess, forge: Upstream, tmp_path: Path
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    staged = _agent_post(proxy, forge, tmp_path, "Desk: tidy the README")
    ident = staged["id"]
    forge.clear()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(desk_url(proxy))
            assert page.url.endswith("/login")  # nothing without the operator secret
            assert page.title() == "gitvow approval desk: sign in" and "coding agents" in page.inner_text("body")
            page.fill("input[name=name]", "carol")
            page.fill("input[name=secret]", "not-the-secret")
            page.click("button:has-text('Sign in')")
            assert "not the operator secret" in page.inner_text("body")
            page.fill("input[name=name]", "carol")
            page.fill("input[name=secret]", ADMIN_SECRET)
            page.click("button:has-text('Sign in')")
            card = page.locator(f"#approval-{ident}")
            text = card.inner_text()
            for shown in ("coder", "pr.create", "team/app", "Desk: tidy the README", "Why: the desk test.", "desk", "main"):
                assert shown in text, text
            assert page.locator("#decisions-chart rect").count() > 0
            assert "deny: hard_deny" in page.inner_text("figure")
            # Each reason keeps its colour; the axis is dated; timestamps never wrap.
            assert page.locator("figure .legend li:has-text('deny: hard_deny') rect").get_attribute("fill") == "#c62828"
            assert re.search(r"\d\d [A-Z][a-z]{2} \d\d:\d\d", page.text_content("#decisions-chart") or "")
            assert page.eval_on_selector(f"#approval-{ident} time", "t => getComputedStyle(t).whiteSpace") == "nowrap"
            page.screenshot(path=str(tmp_path / "desk.png"), full_page=True)
            card.get_by_role("button", name=f"Approve {ident}").click()
            assert f"Approved {ident}" in page.inner_text(".flash")
            assert page.locator(f"#approval-{ident} .status").first.inner_text().lower() in ("approved", "sending", "sent")
        finally:
            browser.close()
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    created = [s for s in forge.seen if s.method == "POST" and s.route == "/api/v3/repos/team/app/pulls"]
    assert len(created) == 1 and created[0].headers["authorization"] == f"Bearer {GIT_TOKEN}"
    assert json.loads(created[0].body)["title"] == "Desk: tidy the README"
    steps = [(line["verdict"], line.get("by")) for line in proxy.audit_lines() if line.get("approval") == ident]
    assert ("approved", "carol (desk)") in steps and ("sent", None) in steps


def test_the_desk_refuses_forms_without_its_session_token_or_from_elsewhere(
    proxy: ProxyProcess, forge: Upstream, tmp_path: Path
) -> None:
    import httpx

    ident = _agent_post(proxy, forge, tmp_path, "Desk: not this way")["id"]
    base = desk_url(proxy).rstrip("/")
    mine = {"Origin": base}
    with httpx.Client(base_url=base, follow_redirects=False, timeout=10) as client:
        assert client.get("/").headers["location"] == "/login"
        assert client.post(f"/approvals/{ident}/approve", data={"csrf": "x"}, headers=mine).headers["location"] == "/login"
        assert client.post("/login", data={"name": "mallory", "secret": ADMIN_SECRET}).status_code == 403  # no Origin
        signed = client.post("/login", data={"name": "mallory", "secret": ADMIN_SECRET}, headers=mine)
        assert signed.status_code == 303 and "HttpOnly" in signed.headers["set-cookie"]
        assert "SameSite=Strict" in signed.headers["set-cookie"]
        where = signed.headers["location"]
        assert client.post(f"{where}approvals/{ident}/approve", data={"csrf": "forged"}, headers=mine).status_code == 403
        page = client.get(where).text
        csrf = re.search(r"name='csrf' value='([^']+)'", page)
        assert csrf
        elsewhere = client.post(f"{where}approvals/{ident}/approve", data={"csrf": csrf.group(1)},
                                headers={"Origin": "http://evil.test"})
        assert elsewhere.status_code == 403
    assert gitvow(proxy, "approvals", "show", ident, "--json").stdout.count('"status": "pending"') == 1
    assert gitvow(proxy, "approvals", "reject", ident, "--reason", "cleanup").returncode == 0
