"""Targets the forge resolves, on a live proxy: ``gh issue create -R`` on a paused repository
(gh names it by a node id), python-gitlab on a paused project named by its numeric id, and
the transport rules (no credential over plain ``http://``; no protocol upgrades).

The stand-ins answer the lookups the proxy sends (``nodes(ids:)``, ``GET /projects/:id``)
and record what reached them, so each test shows both that the write never arrived and
that the proxy asked the forge with its own credential.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from proxy_support import (
    GIT_TOKEN,
    RESOLVE_ADDON,
    SECRETS,
    ProxyProcess,
    Seen,
    Upstream,
    proxy_env,
    start_proxy,
    start_upstream,
)

from gitvow.testing import RecordingServer

pytestmark = pytest.mark.e2e

GHES = "ghes.test"
GITLAB = "gitlab.test"
PLAIN = "plain.test"
MARKED = "marked.test"
REPOS = {"R_team_app": "team/app", "R_team_open": "team/open"}
PROJECTS = {424242: "team/app", 7: "team/open"}


def _json(data: object, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


def _github(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Enough GraphQL for ``gh issue create`` and the proxy's ``nodes(ids:)`` lookup; issue 7
    of team/open is a pull request, issue 8 an issue."""
    if seen.route.startswith("/api/v3/repos/team/open/issues/"):
        number = int(seen.route.rsplit("/", 1)[1])
        pull = {"url": f"https://{GHES}/api/v3/repos/team/open/pulls/7"} if number == 7 else None
        return _json({"number": number, "title": "x", **({"pull_request": pull} if pull else {})})
    if seen.route != "/api/graphql":
        return _json({"message": "Not Found"}, 404)
    payload = json.loads(seen.body or b"{}")
    query, variables = payload.get("query", ""), payload.get("variables") or {}
    if "nodes(ids:" in query:
        return _json({"data": {"nodes": [
            {"__typename": "Repository", "nameWithOwner": REPOS[i]} if i in REPOS else None for i in variables["ids"]
        ]}})
    if "createIssue" in query:
        repo = REPOS.get(variables.get("input", {}).get("repositoryId", ""), "team/app")
        return _json({"data": {"createIssue": {"issue": {"id": "I_1", "number": 1,
                                                         "url": f"https://{GHES}/{repo}/issues/1"}}}})
    if "repository(" in query:
        name = f"{variables.get('owner')}/{variables.get('name')}"
        node = next((i for i, r in REPOS.items() if r == name), "R_unknown")
        return _json({"data": {"repository": {
            "id": node, "name": variables.get("name"), "owner": {"login": variables.get("owner")},
            "hasIssuesEnabled": True, "viewerPermission": "WRITE", "nameWithOwner": name,
        }}})
    return _json({"data": {"viewer": {"login": "agent"}}})


def _gitlab(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """``GET /api/v4/projects/:id`` (the proxy's lookup) and issue creation."""
    parts = seen.route.split("/")
    if parts[1:4] == ["api", "v4", "projects"] and len(parts) >= 5 and parts[4].isdigit():
        project = int(parts[4])
        if project not in PROJECTS:
            return _json({"message": "404 Project Not Found"}, 404)
        if len(parts) == 5 and seen.method == "GET":
            return _json({"id": project, "path_with_namespace": PROJECTS[project]})
        if parts[5:] == ["issues"] and seen.method == "POST":
            return _json({"id": 1, "iid": 1, "project_id": project, "title": "t"}, 201)
    return _json({"message": "404 Not Found"}, 404)


@pytest.fixture(scope="module")
def forges(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Upstream]]:
    pytest.importorskip("gitvow_github")
    pytest.importorskip("gitvow_gitlab")
    root = tmp_path_factory.mktemp("forge-root")
    github = start_upstream(ca, root, names=(GHES,))
    github.routes["/"] = _github
    gitlab = start_upstream(ca, root, names=(GITLAB,))
    gitlab.routes["/"] = _gitlab
    yield {"github": github, "gitlab": gitlab}
    github.server.shutdown()
    gitlab.server.shutdown()


@pytest.fixture(scope="module")
def plain() -> Iterator[dict[str, RecordingServer]]:
    servers = {name: RecordingServer((200, {"Content-Type": "application/json"}, b"{}")).start()
               for name in (PLAIN, MARKED)}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="module")
def tproxy(forges: dict[str, Upstream], plain: dict[str, RecordingServer], ca_file: Path, broken_plugin_path: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("tproxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{GHES}:{forges['github'].port}" = "github"
        "{GITLAB}:{forges['gitlab'].port}" = "gitlab"
        "{PLAIN}:{plain[PLAIN].port}" = "github"
        "{MARKED}:{plain[MARKED].port}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [credentials.gitlab]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = ":memory:"
        plain_hosts = ["{MARKED}:{plain[MARKED].port}"]

        [run_state]
        paused = ["team/app"]

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"

        [agents.limited]
        mode = "issues_only"
        secret_env = "GITVOW_TEST_LIMITED"
    """))
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": ",".join((GHES, GITLAB, PLAIN, MARKED))}
    running = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def _agent_env(proxy: ProxyProcess, home: Path) -> dict[str, str]:
    from test_github_e2e import agent_env

    return agent_env(proxy, "coder", home)


def _gh_issue_create(proxy: ProxyProcess, github: Upstream, home: Path, repo: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("gh") is None:
        pytest.skip("the gh CLI is not installed (Debian package gh)")
    env = {**_agent_env(proxy, home), "GH_HOST": f"{GHES}:{github.port}", "GH_CONFIG_DIR": str(home / "gh"),
           "GH_NO_UPDATE_NOTIFIER": "1", "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"}
    return subprocess.run(["gh", "issue", "create", "-R", f"{GHES}:{github.port}/{repo}", "--title", "a bug",
                           "--body", "it breaks"], capture_output=True, text=True, env=env, timeout=60)


def _mutations(github: Upstream, field: str) -> list[Seen]:
    return [s for s in github.seen if s.route == "/api/graphql" and field in json.loads(s.body or b"{}").get("query", "")]


def test_gh_issue_create_on_a_paused_repository_is_refused(
    tproxy: ProxyProcess, forges: dict[str, Upstream], tmp_path: Path
) -> None:
    github = forges["github"]
    github.clear()
    result = _gh_issue_create(tproxy, github, tmp_path, "team/app")
    assert result.returncode != 0, result.stdout
    assert _mutations(github, "createIssue") == []  # the write never reached the forge
    (lookup,) = _mutations(github, "nodes(ids:")  # the proxy asked, with its own credential
    assert lookup.headers["authorization"] == f"Bearer {GIT_TOKEN}"
    assert json.loads(lookup.body)["variables"] == {"ids": ["R_team_app"]}
    denied = [d for d in tproxy.audit_lines() if d["verdict"] == "deny"]
    assert denied[-1]["reason"] == "repo_paused" and denied[-1]["operations"] == ["issue.create"]

    # The same command on a repository that is not paused goes through, and the answer is
    # cached: a second issue asks the forge nothing more.
    github.clear()
    for _ in range(2):
        result = _gh_issue_create(tproxy, github, tmp_path, "team/open")
        assert result.returncode == 0, result.stderr
    assert len(_mutations(github, "createIssue")) == 2
    assert len(_mutations(github, "nodes(ids:")) == 1


def test_python_gitlab_on_a_paused_project_by_numeric_id_is_refused(
    tproxy: ProxyProcess, forges: dict[str, Upstream], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitlab_lib = pytest.importorskip("gitlab")
    env = _agent_env(tproxy, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    upstream = forges["gitlab"]
    client = gitlab_lib.Gitlab(f"https://{GITLAB}:{upstream.port}", private_token=env.get("GITLAB_TOKEN", "agent"))
    upstream.clear()
    with pytest.raises(gitlab_lib.exceptions.GitlabCreateError) as refused:
        client.projects.get(424242, lazy=True).issues.create({"title": "a bug"})
    assert refused.value.response_code == 403
    assert "reason=repo_paused" in str(refused.value.error_message)
    assert [f"{s.method} {s.route}" for s in upstream.seen] == ["GET /api/v4/projects/424242"]
    assert upstream.seen[0].headers["authorization"] == f"Bearer {GIT_TOKEN}"

    upstream.clear()
    issue = client.projects.get(7, lazy=True).issues.create({"title": "a bug"})
    assert issue.iid == 1
    assert [f"{s.method} {s.route}" for s in upstream.seen] == ["GET /api/v4/projects/7", "POST /api/v4/projects/7/issues"]


def test_closing_a_pull_request_through_the_issues_api_is_pr_edit(
    tproxy: ProxyProcess, forges: dict[str, Upstream]
) -> None:
    github = forges["github"]
    github.clear()
    context = ssl.create_default_context(cafile=str(tproxy.ca))
    base = f"https://{GHES}:{github.port}/api/v3/repos/team/open/issues"
    with httpx.Client(proxy=tproxy.url("limited", SECRETS["limited"]), verify=context, timeout=30) as c:
        pull = c.patch(f"{base}/7", json={"state": "closed"})
        issue = c.patch(f"{base}/8", json={"state": "closed"})
    assert pull.status_code == 403 and pull.headers["x-gitvow-reason"] == "mode_denied"
    line = pull.json()["message"]  # refusals come in the forge's own error shape
    assert "pr.edit" in line and line.endswith("reason=mode_denied")
    assert pull.headers["x-gitvow-reason"] == "mode_denied"
    assert issue.status_code == 200
    assert [f"{s.method} {s.route}" for s in github.seen] == [
        "GET /api/v3/repos/team/open/issues/7", "GET /api/v3/repos/team/open/issues/8",
        "PATCH /api/v3/repos/team/open/issues/8",
    ]


def test_a_failed_lookup_is_repo_unresolved(tproxy: ProxyProcess, forges: dict[str, Upstream], tmp_path: Path) -> None:
    upstream = forges["gitlab"]
    upstream.clear()
    context = ssl.create_default_context(cafile=str(tproxy.ca))
    with httpx.Client(proxy=tproxy.url("coder", SECRETS["coder"]), verify=context, timeout=30) as c:
        r = c.post(f"https://{GITLAB}:{upstream.port}/api/v4/projects/999/issues", json={"title": "t"})
    assert r.status_code == 403 and r.headers["x-gitvow-reason"] == "repo_unresolved"
    assert r.json()["message"].endswith("reason=repo_unresolved")
    assert r.headers["x-gitvow-reason"] == "repo_unresolved"
    assert [f"{s.method} {s.route}" for s in upstream.seen] == ["GET /api/v4/projects/999"]


def test_plain_http_to_a_served_host_is_refused_unless_marked(
    tproxy: ProxyProcess, plain: dict[str, RecordingServer]
) -> None:
    with httpx.Client(proxy=tproxy.url("coder", SECRETS["coder"]), timeout=30) as c:
        refused = c.get(f"http://{PLAIN}:{plain[PLAIN].port}/api/v3/repos/team/open")
        marked = c.get(f"http://{MARKED}:{plain[MARKED].port}/api/v3/repos/team/open")
    assert refused.status_code == 403 and refused.headers["x-gitvow-reason"] == "insecure_upstream"
    assert refused.text.rstrip().endswith("reason=insecure_upstream")
    assert plain[PLAIN].seen == []
    assert marked.status_code == 200
    (seen,) = plain[MARKED].seen
    assert seen.headers["authorization"] == f"Bearer {GIT_TOKEN}"


def test_a_websocket_upgrade_to_a_served_host_is_refused(tproxy: ProxyProcess, forges: dict[str, Upstream]) -> None:
    github = forges["github"]
    github.clear()
    context = ssl.create_default_context(cafile=str(tproxy.ca))
    headers = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    with httpx.Client(proxy=tproxy.url("coder", SECRETS["coder"]), verify=context, timeout=30) as c:
        r = c.get(f"https://{GHES}:{github.port}/api/graphql", headers=headers)
    assert r.status_code == 403 and r.headers["x-gitvow-reason"] == "unsupported_protocol"
    assert github.seen == []


def test_the_lookup_never_reaches_the_agent(tproxy: ProxyProcess) -> None:
    assert GIT_TOKEN not in json.dumps(tproxy.audit_lines())


def test_a_raw_stream_to_a_served_host_is_cut(tproxy: ProxyProcess, forges: dict[str, Upstream]) -> None:
    import base64
    import socket

    github = forges["github"]
    auth = base64.b64encode(f"coder:{SECRETS['coder']}".encode()).decode()
    with socket.create_connection(("127.0.0.1", tproxy.port), timeout=10) as sock:
        sock.sendall(f"CONNECT {GHES}:{github.port} HTTP/1.1\r\nHost: {GHES}:{github.port}\r\n"
                     f"Proxy-Authorization: Basic {auth}\r\n\r\n".encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")  # neither TLS nor HTTP: a raw stream
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
    assert b"SSH" not in received  # nothing came back from the forge: the stream was cut
    cut = [d for d in tproxy.audit_lines() if d["reason"] == "unsupported_protocol" and d["method"] == "STREAM"]
    assert cut and cut[-1]["host"] == f"{GHES}:{github.port}"
