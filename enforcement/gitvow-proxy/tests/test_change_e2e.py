"""What a push changes, end to end: the real ``git`` client through a ``gitvow proxy`` process to
``git http-backend`` mapped as a GitHub Enterprise, a GitLab and a Gitea host (one adapter each).

Each forge gets its own repository whose default branch is ``trunk`` (so the proxy must read
it from the forge, not guess ``main``) and which carries a CI workflow. What must hold on all
three: a push to an allowed branch lands; a push to the default branch, a force push and a
deletion are refused with their codes and never reach the forge; a workflow change is held
for a human, shown, and sent exactly once when approved; a cloud key in a new file is refused
and never echoed. Each refusal is told in git's own words, as a forge refuses a protected
branch: the one-line denial on a ``remote:`` line, ``! [remote rejected] … (gitvow: <code>)``
for every ref, exit status 1 (with ``protocol.version`` 0 and 2).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from proxy_support import (
    GIT_TOKEN,
    GITVOW,
    RESOLVE_ADDON,
    SECRETS,
    ProxyProcess,
    Upstream,
    _run_git_backend,
    agent_client,
    git,
    proxy_env,
    start_proxy,
    start_upstream,
)

from gitvow.testing import Reply, Seen, free_port

pytestmark = pytest.mark.e2e

FORGES = {"github": "ghes.test", "gitlab": "gitlab.test", "gitea": "gitea.test"}
ADMIN_SECRET = "desk-operator-secret-9"
# Shaped like an AWS access key id; assembled so that no scanner of this repository trips on the file.
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"


def _installed(adapter: str) -> bool:
    return importlib.util.find_spec(f"gitvow_{adapter}") is not None


@pytest.fixture(scope="module", params=sorted(FORGES))
def forge_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if not _installed(name):
        pytest.skip(f"gitvow-{name} is not installed")
    return name


def _bare(root: Path, name: str, work: Path) -> None:
    """``root/name.git``: default branch ``trunk``, a README and a CI workflow."""
    bare = root / f"{name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "--bare", "-b", "trunk", str(bare), cwd=root)
    seed = work / f"seed-{name.replace('/', '-')}"
    git("init", "-q", "-b", "trunk", str(seed), cwd=work)
    (seed / "README.md").write_text(f"# {name}\n")
    (seed / ".github" / "workflows").mkdir(parents=True)
    (seed / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    git("add", ".", cwd=seed)
    git("commit", "-q", "-m", "seed", cwd=seed)
    git("push", "-q", str(bare), "trunk", cwd=seed)
    shutil.rmtree(seed)


@pytest.fixture(scope="module")
def forge(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("change-root")
    work = tmp_path_factory.mktemp("change-seed")
    for name in FORGES:
        _bare(root, f"team/{name}", work)
    server = start_upstream(ca, root, names=tuple(FORGES.values()))
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def proxy(forge: Upstream, ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("change-proxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    installed = [name for name in FORGES if _installed(name)]
    hosts = "\n".join(f'"{FORGES[name]}:{forge.port}" = "{name}"' for name in installed)
    credentials = "\n".join(f'[credentials.{name}]\ntoken_env = "GITVOW_TEST_GIT_TOKEN"\n' for name in installed)
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        {hosts}

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [approvals]
        ttl = 3600
        poll_interval = 0.2

        [admin]
        listen = "127.0.0.1:{free_port()}"
        secret_env = "GITVOW_TEST_ADMIN"

        [branches]
        protected = ["release/*"]

        # the CI workflows only (no pattern of a name at any depth, which any deletion could
        # name): a first push that stays out of .github asks the forge nothing
        [paths]
        defaults = false
        rules = {{ ".github/workflows/**" = "stage" }}

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
    """) + credentials)
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": ",".join(FORGES.values()),
           "GITVOW_TEST_ADMIN": ADMIN_SECRET}
    running = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def agent_env(proxy: ProxyProcess, home: Path) -> dict[str, str]:
    out = subprocess.run(
        [GITVOW, "env", "--policy", str(proxy.policy), "--agent", "coder", "--listen-port", str(proxy.port),
         "--confdir", str(proxy.confdir), "--json"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "GITVOW_TEST_CODER": SECRETS["coder"], "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN},
    )
    env: dict[str, str] = json.loads(out.stdout)
    env["HOME"] = str(home)
    return env


def operator(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``gitvow`` as the operator runs it: no forge token and no agent secret in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW_TEST_")}
    return subprocess.run([GITVOW, *args, "--policy", str(proxy.policy)], capture_output=True, text=True, env=env,
                          timeout=60)


#: What git 2.39 appends to each ``remote:`` line when stderr is not a terminal (its "dumb" suffix).
REMOTE_SUFFIX = " " * 8
_APPROVAL = re.compile(r"staged for a human as approval (\w+);")


class Agent:
    """The agent's checkout of one forge's repository, through the proxy."""

    def __init__(self, proxy: ProxyProcess, forge: Upstream, name: str, tmp_path: Path) -> None:
        self.proxy, self.forge, self.name = proxy, forge, name
        self.version = "0"  # git's protocol.version for pushes
        self.env = agent_env(proxy, tmp_path)
        self.url = f"https://{FORGES[name]}:{forge.port}/team/{name}.git"
        self.work = tmp_path / "work"
        git("clone", "-q", self.url, str(self.work), cwd=tmp_path, env=self.env)
        self.bare = forge.git_root / "team" / f"{name}.git"

    def commit(self, files: dict[str, str], message: str = "change") -> str:
        for path, text in files.items():
            target = self.work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            git("add", path, cwd=self.work, env=self.env)
        git("commit", "-q", "-m", message, cwd=self.work, env=self.env)
        return git("rev-parse", "HEAD", cwd=self.work, env=self.env).stdout.strip()

    def push(self, *args: str) -> subprocess.CompletedProcess[str]:
        return git("-c", f"protocol.version={self.version}", "push", *args, cwd=self.work, env=self.env, check=False)

    def head(self, branch: str) -> str | None:
        result = git("--git-dir", str(self.bare), "rev-parse", "--verify", "-q", f"refs/heads/{branch}",
                     cwd=self.work, check=False)
        return result.stdout.strip() or None

    def refused(self, result: subprocess.CompletedProcess[str], code: str, said: str, *rejected: str,
                operation: str = "git.push") -> dict[str, object]:
        """git printed the one-line denial (``… on team/NAME (POST …): <said> reason=<code>``) on
        a ``remote:`` line and ``[remote rejected] <ref> (gitvow: <code>)`` for each of
        ``rejected`` and exited 1; nothing of the push reached the forge, and the audit line
        says ``code``. ``{approval}`` in ``said`` stands for the id of a held push."""
        approval = _APPROVAL.search(result.stderr)
        line = (f"gitvow refused {operation} on team/{self.name} (POST /team/{self.name}.git/git-receive-pack): "
                f"{said.format(approval=approval[1] if approval else '?')} reason={code}")
        assert (result.returncode, result.stderr.splitlines()) == (1, [
            f"remote: {line}{REMOTE_SUFFIX}",
            f"To {self.url}",
            *(f" ! [remote rejected] {ref} (gitvow: {code})" for ref in rejected),
            f"error: failed to push some refs to '{self.url}'",
        ]), result.stderr
        assert [s for s in self.forge.seen if s.method == "POST" and s.path.endswith("/git-receive-pack")] == []
        lines = [line for line in self.proxy.audit_lines()
                 if line.get("agent") == "coder" and line.get("path", "").endswith("/git-receive-pack")]
        assert lines and lines[-1]["reason"] == code, lines[-1:]
        return lines[-1]


@pytest.fixture
def agent(proxy: ProxyProcess, forge: Upstream, forge_name: str, tmp_path: Path) -> Agent:
    return Agent(proxy, forge, forge_name, tmp_path)


@pytest.fixture(params=["0", "2"], ids=["v0", "v2"])
def versioned(agent: Agent, request: pytest.FixtureRequest) -> Agent:
    """The agent pushing with ``git -c protocol.version=0`` and ``=2`` (git 2.39 pushes in v0
    on the wire either way; both are what agents run)."""
    agent.version = request.param
    return agent


HELD = ("git.push needs a human's approval; staged for a human as approval {approval}; it is sent once approved: "
        "`gitvow approvals wait {approval}` (or send the same request again for its result).")


def test_a_push_to_an_allowed_branch_lands(agent: Agent) -> None:
    new = agent.commit({"src/app.py": "print('hello')\n"})
    agent.forge.clear()
    result = agent.push("origin", f"HEAD:refs/heads/agent/{agent.name}-lands")
    assert result.returncode == 0, result.stderr
    assert agent.head(f"agent/{agent.name}-lands") == new
    # the clone's advertisement named the default branch: the push asked the forge nothing more
    assert [s.path for s in agent.forge.seen if "service=git-upload-pack" in s.path] == []


def test_a_push_to_the_default_branch_read_from_the_forge_is_refused(versioned: Agent) -> None:
    agent = versioned
    before = agent.head("trunk")
    agent.commit({"src/app.py": "print('to trunk')\n"})
    agent.forge.clear()
    instead = "push to a branch of your own and open a pull request."
    agent.refused(agent.push("origin", "HEAD:trunk"), "branch_protected",
                  f"refs/heads/trunk is the repository's default branch; {instead}", "HEAD -> trunk")
    agent.refused(agent.push("origin", "HEAD:refs/heads/release/1.x"), "branch_protected",
                  f"refs/heads/release/1.x is a protected branch; {instead}", "HEAD -> release/1.x")
    # a push of two refs: both rejected, neither lands (the allowed one is not sent alone)
    agent.refused(agent.push("origin", "HEAD:trunk", f"HEAD:refs/heads/agent/{agent.name}-pair-{agent.version}"),
                  "branch_protected", f"refs/heads/trunk is the repository's default branch; {instead}",
                  "HEAD -> trunk", f"HEAD -> agent/{agent.name}-pair-{agent.version}")
    assert agent.head("trunk") == before and agent.head("release/1.x") is None
    assert agent.head(f"agent/{agent.name}-pair-{agent.version}") is None


def test_a_force_push_and_a_deletion_are_refused_with_their_codes(agent: Agent) -> None:
    branch = f"agent/{agent.name}-history"
    first = agent.commit({"notes.txt": "one\n"})
    assert agent.push("origin", f"HEAD:refs/heads/{branch}").returncode == 0
    git("commit", "-q", "--amend", "-m", "rewritten", cwd=agent.work, env=agent.env)
    agent.forge.clear()
    never = "{} is denied at every mode; ask a human to do it; no agent mode allows it."
    agent.refused(agent.push("--force", "origin", f"HEAD:refs/heads/{branch}"), "ref_force", never.format("ref.force"),
                  f"HEAD -> {branch}", operation="ref.force")
    agent.refused(agent.push("origin", f"+HEAD:refs/heads/{branch}"), "ref_force", never.format("ref.force"),
                  f"HEAD -> {branch}", operation="ref.force")
    agent.refused(agent.push("origin", f":refs/heads/{branch}"), "ref_delete", never.format("ref.delete"), branch,
                  operation="ref.delete")
    agent.refused(agent.push("origin", "--delete", branch), "ref_delete", never.format("ref.delete"), branch,
                  operation="ref.delete")
    assert agent.head(branch) == first


def test_a_cloud_key_in_a_new_file_is_refused_and_never_echoed(versioned: Agent) -> None:
    agent = versioned
    agent.commit({"config/settings.py": f'AWS_ACCESS_KEY_ID = "{CLOUD_KEY}"\n'})
    agent.forge.clear()
    result = agent.push("origin", f"HEAD:refs/heads/agent/{agent.name}-key")
    found = re.search(r"fingerprint ([0-9a-f]{16})", result.stderr)
    line = agent.refused(result, "secret_detected",
                         f"a credential of kind aws_access_key (fingerprint {found[1] if found else '?'}) in "
                         "config/settings.py; remove it from the commits; rotate it if it is real.",
                         f"HEAD -> agent/{agent.name}-key")
    assert CLOUD_KEY not in result.stderr + result.stdout
    assert CLOUD_KEY not in agent.proxy.audit.read_text() and CLOUD_KEY not in agent.proxy.log_text()
    assert agent.head(f"agent/{agent.name}-key") is None
    assert line["verdict"] == "deny"


def test_a_workflow_change_is_held_shown_and_sent_once_when_approved(versioned: Agent) -> None:
    agent = versioned
    branch = f"agent/{agent.name}-ci-v{agent.version}"
    agent.commit({".github/workflows/ci.yml": "on: push\njobs:\n  deploy:\n    runs-on: self-hosted\n"})
    agent.forge.clear()
    held = agent.push("origin", f"HEAD:refs/heads/{branch}")
    # the agent reads the approval id and the command that waits for it on the remote: line
    agent.refused(held, "path_protected", HELD, f"HEAD -> {branch}")
    listed = operator(agent.proxy, "approvals", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    mine = [a for a in json.loads(listed.stdout) if a["status"] == "pending" and "git.push" in a["operations"]
            and a["request"] == f"POST /team/{agent.name}.git/git-receive-pack"]
    assert len(mine) == 1, listed.stdout
    ident = mine[0]["id"]
    assert f"staged for a human as approval {ident};" in held.stderr
    assert f"`gitvow approvals wait {ident}`" in held.stderr
    # the agent repeats the push while it is held: the same ref updates, the same approval
    retried = agent.push("origin", f"HEAD:refs/heads/{branch}")
    agent.refused(retried, "path_protected", HELD, f"HEAD -> {branch}")
    assert ident in retried.stderr
    relisted = json.loads(operator(agent.proxy, "approvals", "list", "--json").stdout)
    assert [a["id"] for a in relisted if a["request"] == mine[0]["request"] and a["status"] == "pending"] == [ident]
    shown = operator(agent.proxy, "approvals", "show", ident)
    assert shown.returncode == 0, shown.stderr
    assert f"refs/heads/{branch}" in shown.stdout and ".github/workflows/ci.yml" in shown.stdout, shown.stdout
    assert "runs-on: self-hosted" in shown.stdout, shown.stdout  # the protected file as the push leaves it
    assert operator(agent.proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    waited = operator(agent.proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    pushed = git("rev-parse", "HEAD", cwd=agent.work, env=agent.env).stdout.strip()
    assert agent.head(branch) == pushed
    # once sent, git's advertisement shows the branch where the push left it: a repeat is
    # "Everything up-to-date" and sends nothing; the forge saw the push exactly once
    again = agent.push("origin", f"HEAD:refs/heads/{branch}")
    assert (again.returncode, again.stderr) == (0, "Everything up-to-date\n")
    sends = [s for s in agent.forge.seen if s.method == "POST" and s.path.endswith("/git-receive-pack")]
    assert len(sends) == 1, [s.path for s in sends]
    # the held request itself sent again (a client that retries the POST): the forge's own
    # report, as recorded when the approval was sent, and never a second send
    with agent_client(agent.proxy, "coder") as c:
        replayed = c.post(f"{agent.url}/git-receive-pack", content=sends[0].body,
                          headers={"Content-Type": "application/x-git-receive-pack-request"})
    assert replayed.status_code == 200, replayed.text
    assert replayed.headers["content-type"] == "application/x-git-receive-pack-result"
    assert replayed.headers["x-gitvow-approval"] == ident
    assert report_lines(replayed.content) == ["unpack ok", f"ok refs/heads/{branch}"]
    assert len([s for s in agent.forge.seen if s.method == "POST" and s.path.endswith("/git-receive-pack")]) == 1


def _packets(body: bytes) -> list[bytes]:
    """The payloads of ``body``'s pkt-lines (flushes left out)."""
    out, pos = [], 0
    while pos + 4 <= len(body):
        size = int(body[pos : pos + 4], 16)
        if size:
            out.append(body[pos + 4 : pos + size])
        pos += size or 4
    return out


def report_lines(body: bytes) -> list[str]:
    """The report-status lines of a receive-pack answer with side-band-64k (band 1)."""
    report = b"".join(p[1:] for p in _packets(body) if p[:1] == b"\x01")
    return [line.decode().rstrip("\n") for line in _packets(report)]


def test_a_workflow_deleted_beside_new_code_is_a_protected_change(agent: Agent) -> None:
    """Deleting ``.github/workflows/ci.yml`` (the whole of ``.github``) in a push that also adds
    code: the proxy diffs the push against the trees of the branch's last push it read, so the
    deletion is a changed path (``.github/``) and the push is staged, not sent."""
    branch = f"agent/{agent.name}-del"
    agent.commit({"docs/a.md": "a\n"})
    first = agent.push("origin", f"HEAD:refs/heads/{branch}")
    assert first.returncode == 0, first.stderr
    landed = agent.head(branch)
    git("rm", "-q", ".github/workflows/ci.yml", cwd=agent.work, env=agent.env)
    agent.commit({"src/new.py": "print('new')\n"}, "drop the workflow, add code")
    agent.forge.clear()
    agent.refused(agent.push("origin", f"HEAD:refs/heads/{branch}"), "path_protected", HELD, f"HEAD -> {branch}")
    assert agent.head(branch) == landed


def _tree_lookups(agent: Agent) -> list[bytes]:
    """The upload-pack fetches of a commit's trees that reached the forge (the proxy's own)."""
    return [s.body for s in agent.forge.seen if s.method == "POST" and s.path.endswith("/git-upload-pack")
            and b"filter blob:none" in s.body]


def _on_a_commit_the_proxy_never_read(agent: Agent, name: str) -> str:
    """Check out someone else's new commit (pushed to the forge directly, fetched fresh): a
    parent no push through this proxy carried, so its trees are known only to the forge."""
    other = agent.work.parent / f"other-{name}"
    git("clone", "-q", str(agent.bare), str(other), cwd=agent.work.parent)
    (other / "NOTES.md").write_text(f"someone else's commit {name}\n")
    git("add", "NOTES.md", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@example.test", "commit", "-q", "-m", "other", cwd=other)
    git("push", "-q", "origin", f"HEAD:refs/heads/base-{agent.name}-{name}", cwd=other)
    git("fetch", "-q", "origin", f"base-{agent.name}-{name}", cwd=agent.work, env=agent.env)
    git("checkout", "-q", "FETCH_HEAD", cwd=agent.work, env=agent.env)
    return git("rev-parse", "HEAD", cwd=agent.work, env=agent.env).stdout.strip()


def test_the_first_push_deleting_a_workflow_beside_new_code_is_held_from_the_forges_trees(agent: Agent) -> None:
    """On a fresh clone, one commit deletes ``.github/workflows/ci.yml`` and adds ``src/x.py``:
    the proxy has never seen the parent's trees, so it fetches them from the forge
    (upload-pack, ``filter blob:none``, ``deepen 1``), diffs exactly and holds the push; once
    approved it lands."""
    branch = f"agent/{agent.name}-first-del"
    parent = _on_a_commit_the_proxy_never_read(agent, "first")
    git("rm", "-q", ".github/workflows/ci.yml", cwd=agent.work, env=agent.env)
    pushed = agent.commit({"src/x.py": "print('x')\n"}, "drop the workflow, add code")
    before = {a["id"] for a in json.loads(operator(agent.proxy, "approvals", "list", "--json").stdout)}
    agent.forge.clear()
    held = agent.push("origin", f"HEAD:refs/heads/{branch}")
    # held for the deletion itself: the new trees alone show only src/x.py (.github is gone from
    # the root), which no rule names; the exact diff against the fetched trees names ci.yml
    agent.refused(held, "path_protected", HELD, f"HEAD -> {branch}")
    lookups = _tree_lookups(agent)  # the parent's trees, asked once (then cached)
    assert len(lookups) == 1 and f"want {parent}".encode() in lookups[0], lookups
    listed = json.loads(operator(agent.proxy, "approvals", "list", "--json").stdout)
    mine = [a for a in listed if a["status"] == "pending" and a["id"] not in before
            and f"{agent.name}.git/git-receive-pack" in a["request"]]
    assert len(mine) == 1, listed
    assert operator(agent.proxy, "approvals", "approve", mine[0]["id"], "--by", "alice").returncode == 0
    waited = operator(agent.proxy, "approvals", "wait", mine[0]["id"], "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert agent.head(branch) == pushed


def test_a_first_push_that_touches_no_protected_directory_asks_the_forge_nothing(agent: Agent) -> None:
    new = agent.commit({"src/y.py": "print('y')\n"})
    agent.forge.clear()
    result = agent.push("origin", f"HEAD:refs/heads/agent/{agent.name}-plain")
    assert result.returncode == 0, result.stderr
    assert agent.head(f"agent/{agent.name}-plain") == new
    assert [s.path for s in agent.forge.seen if "upload-pack" in s.path] == []


def test_a_forge_that_serves_no_filters_leaves_the_push_unestablished(versioned: Agent) -> None:
    """The same push where the forge refuses ``filter blob:none`` (as an old server would):
    what the push changes cannot be established, so it is refused and never reaches the forge."""
    agent = versioned
    branch = f"agent/{agent.name}-nofilter"
    _on_a_commit_the_proxy_never_read(agent, f"nofilter-v{agent.version}")
    git("rm", "-q", ".github/workflows/ci.yml", cwd=agent.work, env=agent.env)
    agent.commit({"src/z.py": "print('z')\n"}, "drop the workflow, add code")
    path = f"/team/{agent.name}.git/git-upload-pack"

    def no_filters(seen: Seen) -> Reply:
        if b"filter blob:none" in seen.body:
            return 200, {"Content-Type": "application/x-git-upload-pack-result"}, b"0019ERR filter not served0000"
        return _run_git_backend(agent.forge, seen)  # the clone's own fetches: git as usual

    agent.forge.routes[path] = no_filters
    agent.forge.clear()
    try:
        agent.refused(agent.push("origin", f"HEAD:refs/heads/{branch}"), "change_unestablished",
                      "the paths this push changes could not be established: the forge did not give the parent "
                      "commit's trees; ask a human.", f"HEAD -> {branch}")
    finally:
        del agent.forge.routes[path]
    assert len(_tree_lookups(agent)) == 1
    assert agent.head(branch) is None
    # the operator's log says why, not just the class of the failure
    assert f"adapter {agent.name!r} could not resolve 1 target(s) on " in agent.proxy.log_text()
    assert "PackError: the forge refused the fetch" in agent.proxy.log_text(), agent.proxy.log_text()[-2000:]
