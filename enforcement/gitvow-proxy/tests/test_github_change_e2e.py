"""What a write through GitHub's API changes, end to end: PyGithub (``create_file``,
``update_file``, ``delete_file``) and the ``gh`` CLI (``gh api`` for Git Data refs and GraphQL
``createCommitOnBranch``) through a ``gitvow proxy`` process to a loopback GitHub Enterprise
stand-in that records what reached it.

The repository's default branch is ``trunk`` (so the proxy must read it from the forge's API,
not guess ``main``). What must hold: a write to an allowed branch lands; a write to the default
branch (named, or left out of the body) is refused with ``branch_protected``; a forced ref
update and a ref deletion are refused with ``ref_force`` and ``ref_delete``; a workflow file
is held for a human, shown with its new text, and sent exactly once when approved; a cloud key
in new content is refused and never echoed. Nothing refused reaches the forge.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
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
    Upstream,
    from_agents,
    github_policy,
    proxy_env,
    start_proxy,
    start_upstream,
)
from test_github_e2e import agent_env

from gitvow.testing import Seen, free_port

pytestmark = pytest.mark.e2e

HOST = "ghes.test"
ADMIN_SECRET = "desk-operator-secret-9"
# Shaped like an AWS access key id; assembled so that no scanner of this repository trips on the file.
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"
SHA = "c0ffee" * 6 + "abcd"
WORKFLOW = "on: push\njobs:\n  deploy:\n    runs-on: self-hosted\n"
COMMIT_ON_BRANCH = ("mutation($input: CreateCommitOnBranchInput!) "
                    "{ createCommitOnBranch(input: $input) { commit { oid } } }")


def _json(status: int, data: object) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


def _api(upstream: Upstream, seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Just enough of GitHub's answers for PyGithub and gh: the repository (default branch
    ``trunk``), what the contents API wrote, echoed; anything else echoed as it came."""
    base = f"https://{HOST}:{upstream.port}/api/v3"
    path = seen.route
    if path == "/api/v3/repos/team/app":
        return _json(200, {"id": 1, "name": "app", "full_name": "team/app", "owner": {"login": "team"},
                           "default_branch": "trunk", "url": f"{base}/repos/team/app"})
    if "/contents/" in path and seen.method in ("PUT", "DELETE"):
        name = path.split("/contents/", 1)[1]
        content = None if seen.method == "DELETE" else {"name": name.rsplit("/", 1)[-1], "path": name, "sha": SHA,
                                                        "type": "file", "url": f"{base}/repos/team/app/contents/{name}"}
        return _json(200 if seen.method == "DELETE" else 201, {"content": content, "commit": {"sha": SHA}})
    if path == "/api/graphql":
        return _json(200, {"data": {"createCommitOnBranch": {"commit": {"oid": SHA}}}})
    return _json(200, {"method": seen.method, "path": seen.path})


@pytest.fixture(scope="module")
def github(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    server = start_upstream(ca, tmp_path_factory.mktemp("github-change-root"), names=(HOST,))
    server.routes["/api/"] = lambda seen: _api(server, seen)
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def proxy(github: Upstream, ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("github-change-proxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = github_policy(workdir / "policy.toml", github, ca_file, workdir / "state.sqlite", f"""
        [approvals]
        ttl = 3600
        poll_interval = 0.2

        [admin]
        listen = "127.0.0.1:{free_port()}"
        secret_env = "GITVOW_TEST_ADMIN"

        [branches]
        protected = ["release/*"]

        [operations."contents.write"]
        min_mode = "issues_and_prs"
    """, host=f"{HOST}:{github.port}")
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": HOST, "GITVOW_TEST_ADMIN": ADMIN_SECRET}
    running = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def operator(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``gitvow`` as the operator runs it: no forge token and no agent secret in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(proxy.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


class Agent:
    """The agent's PyGithub client and ``gh``, through the proxy."""

    def __init__(self, proxy: ProxyProcess, github: Upstream, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.proxy, self.github, self.home = proxy, github, home
        self.env = agent_env(proxy, "coder", home)
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)  # PyGithub (requests) reads the proxy and CA from the environment
        self.lib = pytest.importorskip("github", reason="PyGithub is the real client this test drives")
        client = self.lib.Github(base_url=f"https://{HOST}:{github.port}/api/v3",
                                 auth=self.lib.Auth.Token(self.env["GH_TOKEN"]), retry=None)
        self.repo = client.get_repo("team/app")
        github.clear()

    def writes(self) -> list[Seen]:
        """The agent's writes that reached the stand-in (not the proxy's own lookups)."""
        return [s for s in from_agents(self.github.seen) if s.method in ("POST", "PUT", "PATCH", "DELETE")]

    def refused(self, call: Any, code: str) -> Any:
        """PyGithub's call is refused 403 with ``code`` and reaches nothing."""
        with pytest.raises(self.lib.GithubException) as refused:
            call()
        assert refused.value.status == 403, refused.value
        assert refused.value.headers["x-gitvow-reason"] == code, refused.value.data
        assert refused.value.data["message"].startswith("gitvow refused"), refused.value.data
        assert self.writes() == [], [s.path for s in self.writes()]
        return refused.value

    def gh(self, *args: str) -> subprocess.CompletedProcess[str]:
        if shutil.which("gh") is None:
            pytest.skip("the gh CLI is not installed (Debian package gh)")
        env = {**self.env, "GH_HOST": f"{HOST}:{self.github.port}", "GH_CONFIG_DIR": str(self.home / "gh"),
               "GH_NO_UPDATE_NOTIFIER": "1", "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"}
        return subprocess.run(["gh", *args, "--include"], capture_output=True, text=True, env=env, timeout=60)

    def gh_refused(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        result = self.gh(*args)
        assert result.returncode != 0, result.stdout
        assert f"X-Gitvow-Reason: {code}" in result.stdout, result.stdout + result.stderr
        assert self.writes() == [], [s.path for s in self.writes()]
        return result

    def commit_on_branch(self, branch: str, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``createCommitOnBranch`` through ``gh api graphql`` (the input as one JSON variable)."""
        additions = [{"path": p, "contents": base64.b64encode(t.encode()).decode()} for p, t in files.items()]
        payload = {"query": COMMIT_ON_BRANCH, "variables": {"input": {
            "branch": {"repositoryNameWithOwner": "team/app", "branchName": branch},
            "message": {"headline": "change"}, "expectedHeadOid": SHA, "fileChanges": {"additions": additions}}}}
        body = self.home / "commit.json"
        body.write_text(json.dumps(payload))
        return self.gh("api", "graphql", "--input", str(body))


@pytest.fixture
def agent(proxy: ProxyProcess, github: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Agent:
    return Agent(proxy, github, tmp_path, monkeypatch)


def test_a_write_to_an_allowed_branch_lands(agent: Agent) -> None:
    agent.repo.create_file("src/app.py", "add", "print('hello')\n", branch="agent/lands")
    (sent,) = agent.writes()
    assert sent.method == "PUT" and sent.route == "/api/v3/repos/team/app/contents/src/app.py"
    assert json.loads(sent.body)["branch"] == "agent/lands"
    assert sent.headers["authorization"] == f"Bearer {GIT_TOKEN}"  # the proxy's credential, not the agent's
    agent.github.clear()
    result = agent.commit_on_branch("agent/lands", {"src/app.py": "print('again')\n"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s.route for s in agent.writes()] == ["/api/graphql"]


def test_a_write_to_the_default_branch_read_from_the_forge_is_refused(agent: Agent) -> None:
    agent.refused(lambda: agent.repo.create_file("src/app.py", "m", "x\n", branch="trunk"), "branch_protected")
    # no branch in the body: GitHub writes the default branch, which the proxy read from the forge
    agent.refused(lambda: agent.repo.create_file("src/app.py", "m", "x\n"), "branch_protected")
    agent.refused(lambda: agent.repo.update_file("src/app.py", "m", "x\n", SHA, branch="release/1.x"),
                  "branch_protected")
    agent.refused(lambda: agent.repo.delete_file("src/app.py", "m", SHA), "branch_protected")
    lookups = [s for s in agent.github.seen if s.headers.get("user-agent") == "gitvow-proxy"]
    assert [s.route for s in lookups] in ([], ["/api/v3/repos/team/app"])  # asked at most once (then cached)
    agent.gh_refused("branch_protected", "api", "-X", "PATCH", "repos/team/app/git/refs/heads/trunk", "-f", f"sha={SHA}")
    result = agent.commit_on_branch("trunk", {"src/app.py": "x\n"})
    assert result.returncode != 0 and "X-Gitvow-Reason: branch_protected" in result.stdout, result.stdout
    assert agent.writes() == []


def test_a_forced_ref_update_and_a_deletion_are_refused_with_their_codes(agent: Agent) -> None:
    agent.gh_refused("ref_force", "api", "-X", "PATCH", "repos/team/app/git/refs/heads/agent/x", "-f", f"sha={SHA}",
                     "-F", "force=true")
    agent.gh_refused("ref_delete", "api", "-X", "DELETE", "repos/team/app/git/refs/heads/agent/x")
    agent.gh_refused("ref_delete", "api", "graphql", "-f", 'query=mutation { deleteRef(input: {refId: "REF_1"}) '
                     "{ clientMutationId } }")
    # without force it is a fast-forward: the branch rules judge it, and an agent branch lands
    result = agent.gh("api", "-X", "PATCH", "repos/team/app/git/refs/heads/agent/x", "-f", f"sha={SHA}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s.method for s in agent.writes()] == ["PATCH"]


def test_a_cloud_key_in_new_content_is_refused_and_never_echoed(agent: Agent) -> None:
    refused = agent.refused(lambda: agent.repo.create_file("config/settings.py", "m",
                                                          f'AWS_ACCESS_KEY_ID = "{CLOUD_KEY}"\n', branch="agent/key"),
                            "secret_detected")
    assert "aws_access_key" in refused.data["message"] and CLOUD_KEY not in json.dumps(refused.data)
    result = agent.commit_on_branch("agent/key", {"config/settings.py": f"KEY = {CLOUD_KEY}\n"})
    assert "X-Gitvow-Reason: secret_detected" in result.stdout and CLOUD_KEY not in result.stdout + result.stderr
    assert agent.writes() == []
    assert CLOUD_KEY not in agent.proxy.audit.read_text() and CLOUD_KEY not in agent.proxy.log_text()


def test_a_workflow_change_is_held_shown_and_sent_once_when_approved(agent: Agent) -> None:
    path = ".github/workflows/ci.yml"
    held = agent.refused(lambda: agent.repo.create_file(path, "ci", WORKFLOW, branch="agent/ci"), "path_protected")
    ident = held.headers["x-gitvow-approval"]
    shown = operator(agent.proxy, "approvals", "show", ident)
    assert shown.returncode == 0, shown.stderr
    assert "refs/heads/agent/ci" in shown.stdout and path in shown.stdout, shown.stdout
    assert "runs-on: self-hosted" in shown.stdout, shown.stdout  # the file as the write leaves it, decoded
    assert operator(agent.proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    waited = operator(agent.proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    again = agent.repo.create_file(path, "ci", WORKFLOW, branch="agent/ci")  # the same request: the recorded answer
    assert again["commit"].sha == SHA
    sent = agent.writes()
    assert len(sent) == 1 and sent[0].route.endswith(f"/contents/{path}"), [s.path for s in sent]
    assert json.loads(sent[0].body)["content"] == base64.b64encode(WORKFLOW.encode()).decode()


def test_a_workflow_change_through_create_commit_on_branch_is_held_and_sent_once(agent: Agent) -> None:
    """The same case through GraphQL's ``createCommitOnBranch``: held with its path, shown to
    the operator, sent once when approved; the agent's repeated request gets the recorded answer."""
    path = ".github/workflows/release.yml"
    held = agent.commit_on_branch("agent/release", {path: WORKFLOW})
    assert held.returncode != 0 and "X-Gitvow-Reason: path_protected" in held.stdout, held.stdout + held.stderr
    assert agent.writes() == []
    (ident,) = [line.split(":", 1)[1].strip() for line in held.stdout.splitlines()
                if line.lower().startswith("x-gitvow-approval:")]
    shown = operator(agent.proxy, "approvals", "show", ident)
    assert shown.returncode == 0, shown.stderr
    assert path in shown.stdout, shown.stdout
    assert operator(agent.proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    waited = operator(agent.proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    again = agent.commit_on_branch("agent/release", {path: WORKFLOW})
    assert again.returncode == 0, again.stdout + again.stderr
    sent = agent.writes()
    assert [s.route for s in sent] == ["/api/graphql"], [s.path for s in sent]
    variables = json.loads(sent[0].body)["variables"]["input"]
    assert variables["fileChanges"]["additions"][0]["path"] == path


def test_a_tree_entry_in_place_of_the_workflows_directory_is_held_like_a_workflow(agent: Agent) -> None:
    """A Git Data tree whose entry sits at ``.github/workflows`` itself (a blob, or a deletion
    with a null sha) replaces the directory and so every workflow in it: the protected pattern
    ``.github/workflows/**`` names the directory too, so the tree is held for a human like a
    workflow file, and the forge never receives it."""
    for entry in ({"path": ".github/workflows", "mode": "100644", "type": "blob", "content": "gone\n"},
                  {"path": ".github/workflows", "mode": "040000", "type": "tree", "sha": None},
                  {"path": ".github", "mode": "120000", "type": "blob", "content": "/tmp"}):
        body = agent.home / "tree.json"
        body.write_text(json.dumps({"base_tree": SHA, "tree": [entry]}))
        result = agent.gh("api", "-X", "POST", "repos/team/app/git/trees", "--input", str(body))
        assert result.returncode != 0 and "X-Gitvow-Reason: path_protected" in result.stdout, (entry, result.stdout)
        assert agent.writes() == [], entry
