"""``gitvow proxy`` in front of a GitHub Enterprise style host, driven by the ``gh`` CLI,
PyGithub and httpx: relay and mode denials (one line, the right code), allowed requests with
the injected token, a canary in a comment body.

The host is named ``ghes.test`` because Go (``gh``) never sends loopback addresses through a
proxy; a test-only mitmproxy script in the proxy process resolves that name to 127.0.0.1,
as ``/etc/hosts`` would.
"""

from __future__ import annotations

import json
import os
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
    GITVOW,
    RESOLVE_ADDON,
    SECRETS,
    ProxyProcess,
    Seen,
    Upstream,
    from_agents,
    proxy_env,
    start_proxy,
    start_upstream,
)

pytestmark = pytest.mark.e2e

HOST = "ghes.test"
def _api(upstream: Upstream, seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Just enough of GitHub's REST and GraphQL answers for gh and PyGithub."""
    base = f"https://{HOST}:{upstream.port}/api/v3"
    path = seen.path.split("?", 1)[0]
    if path == "/api/graphql":
        data: object = {"data": {"viewer": {"login": "agent"}}}
    elif path == "/api/v3/repos/team/app":
        data = {"id": 1, "name": "app", "full_name": "team/app", "owner": {"login": "team"},
                "url": f"{base}/repos/team/app"}
    elif path == "/api/v3/repos/team/app/issues/1":
        data = {"id": 11, "number": 1, "title": "a bug", "url": f"{base}/repos/team/app/issues/1",
                "comments_url": f"{base}/repos/team/app/issues/1/comments"}
    elif path.endswith("/comments") and seen.method == "POST":
        return 201, {"Content-Type": "application/json"}, json.dumps({"id": 5, "body": "ok"}).encode()
    else:
        data = {"method": seen.method, "path": seen.path}
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()


@pytest.fixture(scope="module")
def github(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    root = tmp_path_factory.mktemp("github-root")
    server = start_upstream(ca, root, names=(HOST,))
    server.routes["/api/"] = lambda seen: _api(server, seen)
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def ghproxy(
    github: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("ghproxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}:{github.port}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [agents.reader]
        mode = "advisory"
        secret_env = "GITVOW_TEST_READER"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"

        [issue_shape]
        required_sections = ["## Why"]

        [budget]
        window_seconds = 3600
        operations = {{ "issue.create" = 3 }}
    """))
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": HOST}
    running = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def agent_env(proxy: ProxyProcess, agent: str, home: Path) -> dict[str, str]:
    out = subprocess.run(
        [GITVOW, "env", "--policy", str(proxy.policy), "--agent", agent, "--listen-port", str(proxy.port),
         "--confdir", str(proxy.confdir), "--json"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "GITVOW_TEST_READER": SECRETS["reader"], "GITVOW_TEST_CODER": SECRETS["coder"],
             "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN},
    )
    env: dict[str, str] = json.loads(out.stdout)
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **env}


# -- gh ------------------------------------------------------------------------------------

def gh(proxy: ProxyProcess, upstream: Upstream, agent: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("gh") is None:
        pytest.skip("the gh CLI is not installed (Debian package gh)")
    env = {
        **agent_env(proxy, agent, home),
        "GH_HOST": f"{HOST}:{upstream.port}",
        "GH_CONFIG_DIR": str(home / "gh"),
        "GH_NO_UPDATE_NOTIFIER": "1",
        "GH_PROMPT_DISABLED": "1",
        "NO_COLOR": "1",
    }
    return subprocess.run(["gh", *args], capture_output=True, text=True, env=env, timeout=60)


def test_gh_read_is_forwarded_with_the_injected_token(ghproxy: ProxyProcess, github: Upstream, tmp_path: Path) -> None:
    github.clear()
    result = gh(ghproxy, github, "reader", tmp_path, "api", "repos/team/app")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["full_name"] == "team/app"
    (seen,) = github.seen
    assert seen.headers["authorization"] == f"Bearer {GIT_TOKEN}"
    assert "gvc_" not in json.dumps(seen.headers)  # the agent's placeholder token never arrives


@pytest.mark.parametrize(
    ("agent", "args", "code", "operation"),
    [
        ("coder", ("api", "-X", "POST", "repos/team/app/pulls", "-f", "title=t", "-f", "head=x", "-f", "base=main"),
         "hard_deny", "pr.create"),
        ("coder", ("api", "-X", "PUT", "repos/team/app/pulls/1/merge"), "hard_deny", "pr.merge"),
        ("reader", ("api", "-X", "POST", "repos/team/app/issues/1/comments", "-f", "body=hello"),
         "mode_denied", "issue.comment"),
        ("coder", ("api", "graphql", "-f", 'query=mutation { mergePullRequest(input: {pullRequestId: "P1"}) { clientMutationId } }'),
         "hard_deny", "pr.merge"),
    ],
    ids=["pr-create-relay", "pr-merge-relay", "comment-at-advisory", "graphql-merge-relay"],
)
def test_gh_denials_are_one_line_with_the_code(
    ghproxy: ProxyProcess, github: Upstream, tmp_path: Path, agent: str, args: tuple[str, ...], code: str, operation: str
) -> None:
    github.clear()
    result = gh(ghproxy, github, agent, tmp_path, *args, "--include")
    assert result.returncode != 0
    # REST refuses with 403; GraphQL with 200 and errors, as GitHub answers a forbidden mutation
    status = 200 if "graphql" in args else 403
    assert f"HTTP/1.1 {status}" in result.stdout or f"HTTP/2.0 {status}" in result.stdout, result.stdout + result.stderr
    assert f"X-Gitvow-Reason: {code}" in result.stdout
    # The body is GitHub's error shape (a REST message, GraphQL errors), so gh prints the line itself.
    body = json.loads(result.stdout.split("\n\n", 1)[1])
    shown = body["errors"][0]["message"] if "graphql" in args else body["message"]
    assert shown.startswith("gitvow refused") and shown.endswith(f"reason={code}") and operation in shown
    lines = [line for line in result.stderr.splitlines() if "gitvow refused" in line]
    assert len(lines) == 1 and shown in lines[0], result.stderr
    if code == "hard_deny":  # the default relay: staged for a human, with the approval's id
        assert "staged for a human as approval" in shown and "X-Gitvow-Approval: " in result.stdout
    assert from_agents(github.seen) == []


# -- PyGithub --------------------------------------------------------------------------------

def test_pygithub_comment_allowed_canary_refused_relay_denied(
    ghproxy: ProxyProcess, github: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gh_lib = pytest.importorskip("github")
    env = agent_env(ghproxy, "coder", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = gh_lib.Github(base_url=f"https://{HOST}:{github.port}/api/v3", auth=gh_lib.Auth.Token(env["GH_TOKEN"]),
                           retry=None)
    github.clear()
    repo = client.get_repo("team/app")
    issue = repo.get_issue(1)
    issue.create_comment("looks good")
    posted = [s for s in github.seen if s.method == "POST"]
    assert len(posted) == 1 and posted[0].headers["authorization"] == f"Bearer {GIT_TOKEN}"
    github.clear()
    with pytest.raises(gh_lib.GithubException) as leaked:
        issue.create_comment(f"my token: {env['GH_TOKEN']}")
    assert leaked.value.status == 403 and leaked.value.headers["x-gitvow-reason"] == "canary_egress"
    with pytest.raises(gh_lib.GithubException) as relayed:
        repo.create_pull(title="t", body="b", head="x", base="main")
    assert relayed.value.status == 403 and relayed.value.headers["x-gitvow-reason"] == "hard_deny"
    assert relayed.value.data["message"].endswith("reason=hard_deny")  # what PyGithub shows
    assert relayed.value.headers["x-gitvow-approval"] in relayed.value.data["message"]
    assert [s for s in github.seen if s.method == "POST"] == []


def test_pygithub_and_gh_issues_are_shaped_and_counted_per_issue(
    ghproxy: ProxyProcess, github: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyGithub's create_issue is judged by its own title and body; a GraphQL request creating
    several issues (aliases) has every one checked and counts each against the cap of 3."""
    gh_lib = pytest.importorskip("github")
    env = agent_env(ghproxy, "coder", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = gh_lib.Github(base_url=f"https://{HOST}:{github.port}/api/v3", auth=gh_lib.Auth.Token(env["GH_TOKEN"]),
                           retry=None)
    repo = client.get_repo("team/app")
    github.clear()
    with pytest.raises(gh_lib.GithubException) as shaped:
        repo.create_issue(title="a bug", body="no sections here")
    assert shaped.value.status == 403 and shaped.value.headers["x-gitvow-reason"] == "issue_shape"
    repo.create_issue(title="a bug", body="## Why\nit crashes")  # 1 of 3
    assert [s.path for s in github.seen if s.method == "POST"] == ["/api/v3/repos/team/app/issues"]

    def create(*titles: str, body: str = "## Why\\nit crashes") -> str:
        fields = " ".join(f'i{n}: createIssue(input: {{repositoryId: "R", title: "{t}", body: "{body}"}}) {{ issue {{ id }} }}'
                          for n, t in enumerate(titles))
        return f"query=mutation {{ {fields} }}"

    github.clear()
    bad = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", create("ok", "ok", body="nope"), "--include")
    assert "X-Gitvow-Reason: issue_shape" in bad.stdout and "issue 1 of 2" in bad.stdout, bad.stdout + bad.stderr
    over = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", create("a", "b", "c"), "--include")
    assert "429" in over.stdout.splitlines()[0] and "X-Gitvow-Reason: write_budget" in over.stdout, over.stdout
    assert from_agents(github.seen) == []
    fits = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", create("a", "b"))
    assert fits.returncode == 0, fits.stderr
    assert len(github.seen) == 1  # 1 + 2 = 3: the cap is reached, not passed


def test_gh_graphql_variable_defaults_are_read_as_github_runs_them(
    ghproxy: ProxyProcess, github: Upstream, tmp_path: Path
) -> None:
    """The issue's body comes from the document's default when gh sends no such variable."""
    query = ('query=mutation($b: String = "%s") { createIssue(input: {repositoryId: "R", title: "t", body: $b}) '
             '{ issue { id } } }')
    github.clear()
    defaulted_bad = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", query % "no sections", "--include")
    assert "X-Gitvow-Reason: issue_shape" in defaulted_bad.stdout, defaulted_bad.stdout + defaulted_bad.stderr
    overridden = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", query % "## Why\\nok",
                    "-f", "b=no sections", "--include")
    assert "X-Gitvow-Reason: issue_shape" in overridden.stdout, overridden.stdout
    # A good default passes the shape gate; the cap of 3 issues, used up above, then throttles it.
    defaulted_good = gh(ghproxy, github, "coder", tmp_path, "api", "graphql", "-f", query % "## Why\\nok", "--include")
    assert "X-Gitvow-Reason: write_budget" in defaulted_good.stdout, defaulted_good.stdout
    assert from_agents(github.seen) == []


# -- httpx -----------------------------------------------------------------------------------

def test_httpx_graphql_query_allowed_mutation_denied(ghproxy: ProxyProcess, github: Upstream) -> None:
    context = ssl.create_default_context(cafile=str(ghproxy.ca))
    url = f"https://{HOST}:{github.port}/api/graphql"
    github.clear()
    with httpx.Client(proxy=ghproxy.url("reader", SECRETS["reader"]), verify=context, timeout=30) as c:
        query = c.post(url, json={"query": "query { viewer { login } }"})
        mutation = c.post(url, json={"query": 'mutation { addComment(input: {subjectId: "I1", body: "x"}) { clientMutationId } }'})
    assert query.status_code == 200 and query.json()["data"]["viewer"]["login"] == "agent"
    assert mutation.status_code == 200  # GitHub's own answer to a forbidden mutation: errors, no data
    assert mutation.json()["data"] is None
    reason = mutation.headers["x-gitvow-reason"]
    assert reason in ("mode_denied", "graphql_mutation")
    assert mutation.json()["errors"][0]["message"].endswith(f"reason={reason}")
    assert [s.body for s in github.seen] == [b'{"query":"query { viewer { login } }"}']
