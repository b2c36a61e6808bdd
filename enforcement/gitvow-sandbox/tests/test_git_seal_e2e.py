"""``.git`` sealed: after a hostile run, git outside (the operator's status, log, fetch,
commit) runs nothing the agent wrote, while commits made inside land.

Real bubblewrap and git. Every payload the agent plants asks git to write a marker file
(``core.fsmonitor``, a hook); the test then runs the operator's git in the main tree, a
linked worktree and a submodule, and finds no marker. The proxy is a bare loopback listener:
nothing here goes over the network.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import gitvow_run, python_inside

pytestmark = pytest.mark.e2e

GIT_ENV = {"GIT_AUTHOR_NAME": "op", "GIT_AUTHOR_EMAIL": "op@example.test", "GIT_COMMITTER_NAME": "op",
           "GIT_COMMITTER_EMAIL": "op@example.test", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def ok(*args: str, cwd: Path, home: Path) -> str:
    done = git(*args, cwd=cwd, home=home)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture
def listener() -> Iterator[int]:
    """Stands in for the proxy: ``gitvow run --proxy`` only checks that it answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The operator's home, holding a project with a remote, a linked worktree, a submodule,
    an included configuration file and a hooks directory in the tree (``core.hooksPath``)."""
    home = tmp_path / "home"
    src = home / "src"
    src.mkdir(parents=True)
    for bare in ("origin.git", "lib.git"):
        ok("init", "-q", "--bare", "-b", "main", str(tmp_path / bare), cwd=tmp_path, home=home)
    seed = tmp_path / "seed"
    ok("clone", "-q", str(tmp_path / "lib.git"), str(seed), cwd=tmp_path, home=home)
    ok("commit", "-q", "--allow-empty", "-m", "lib", cwd=seed, home=home)
    ok("push", "-q", "origin", "HEAD:main", cwd=seed, home=home)
    project = src / "project"
    ok("init", "-q", "-b", "main", str(project), cwd=src, home=home)
    ok("remote", "add", "origin", str(tmp_path / "origin.git"), cwd=project, home=home)
    (project / ".githooks").mkdir()
    (project / "team.gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    ok("config", "include.path", "../team.gitconfig", cwd=project, home=home)
    (project / "tools").mkdir()
    (project / "tools" / "fsmonitor.sh").write_text("#!/bin/sh\nexit 1\n")  # the operator's, run by git
    (project / "tools" / "fsmonitor.sh").chmod(0o755)
    ok("config", "core.fsmonitor", "tools/fsmonitor.sh", cwd=project, home=home)
    ok("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(tmp_path / "lib.git"), "sub",
       cwd=project, home=home)
    # an older submodule whose repository is embedded in its checkout (legacy/.git a directory)
    ok("clone", "-q", str(tmp_path / "lib.git"), str(project / "legacy"), cwd=tmp_path, home=home)
    ok("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(tmp_path / "lib.git"), "legacy",
       cwd=project, home=home)
    ok("commit", "-q", "-m", "first", cwd=project, home=home)
    ok("push", "-q", "origin", "main", cwd=project, home=home)
    ok("worktree", "add", "-q", str(src / "wt"), "-b", "side", cwd=project, home=home)
    return home


HOSTILE = r"""
import json, os, sys
mark = sys.argv[1]
config = f"[core]\n\tfsmonitor = echo x >{mark}/" + "{}\n"
hook = f"#!/bin/sh\necho x >{mark}/" + "{}\n"
out = {}

def attempt(name, action):
    try:
        action()
        out[name] = "done"
    except OSError as exc:
        out[name] = type(exc).__name__

def write(path, text, mode=0o644):
    def act():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
    return act

os.makedirs(".git/evil", exist_ok=True)
open(".git/evil/config", "w").write(config.format("commondir"))
os.makedirs(".git/evil/hooks", exist_ok=True)
attempt("commondir", write(".git/commondir", "evil\n"))
attempt("config", write(".git/config", config.format("config")))
attempt("config.worktree", write(".git/config.worktree", config.format("config.worktree")))
attempt("include", write("team.gitconfig", config.format("include")))
attempt("hooks", write(".git/hooks/post-commit", hook.format("hooks"), 0o755))
attempt("hooksPath", write(".githooks/post-commit", hook.format("hooksPath"), 0o755))
attempt("fsmonitor program", write("tools/fsmonitor.sh", hook.format("fsmonitor-program"), 0o755))
attempt("info", write(".git/info/attributes", "* diff=evil\n"))
attempt("modules config", write(".git/modules/sub/config", config.format("modules-config")))
attempt("modules hook", write(".git/modules/sub/hooks/post-commit", hook.format("modules-hook"), 0o755))
attempt("modules commondir", write(".git/modules/sub/commondir", "../../evil\n"))
attempt("submodule gitdir file", write("sub/.git", "gitdir: ../.git/evil\n"))
attempt("embedded submodule config", write("legacy/.git/config", config.format("legacy-config")))
attempt("embedded submodule hook", write("legacy/.git/hooks/post-commit", hook.format("legacy-hook"), 0o755))
attempt("rename embedded .git", lambda: os.rename("legacy/.git", "legacy/.git-old"))
attempt("worktree config", write(".git/worktrees/wt/config.worktree", config.format("worktree-config")))
attempt("worktree commondir", write(".git/worktrees/wt/commondir", "../../evil\n"))
attempt("worktree gitdir", write(".git/worktrees/wt/gitdir", "/nowhere/.git\n"))
attempt("rename .git", lambda: os.rename(".git", ".git-old"))
attempt("remove .git", lambda: os.rmdir(".git"))
print(json.dumps(out))
"""


def run(home: Path, cwd: Path, listener: int, command: list[str], policy_extra: str = ""
        ) -> subprocess.CompletedProcess[str]:
    policy = home.parent / "policy.toml"
    policy.write_text('[agents.coder]\nmode = "issues_and_prs"\n' + policy_extra)
    env_json = home.parent / "env.json"
    env_json.write_text(json.dumps({"HTTPS_PROXY": f"http://coder:secret@127.0.0.1:{listener}"}))
    return gitvow_run(["--agent", "coder", "--policy", str(policy), "--proxy", f"http://127.0.0.1:{listener}",
                       "--env-json", str(env_json), "--", *command], home=home, cwd=cwd, env=GIT_ENV)


def test_a_hostile_run_leaves_nothing_git_outside_obeys_and_commits_inside_land(home: Path, listener: int,
                                                                               tmp_path: Path) -> None:
    project, wt = home / "src" / "project", home / "src" / "wt"
    mark = tmp_path / "marks"
    mark.mkdir()
    result = run(home, project, listener, [*python_inside(HOSTILE), str(mark)])
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert {name for name, what in outcome.items() if what == "done"} == set(), outcome

    # commits work inside, in the tree and in a linked worktree (its repository lies outside the tree)
    commit = ["/bin/sh", "-c", "git -c user.name=a -c user.email=a@example.test commit -q --allow-empty -m inside && git log -1 --format=%s"]
    for tree in (project, wt):
        inside = run(home, tree, listener, commit)
        assert (inside.returncode, inside.stdout) == (0, "inside\n"), inside.stderr

    # the operator's git, outside, in each of them
    for tree in (project, wt, project / "sub", project / "legacy"):
        ok("status", "--short", cwd=tree, home=home)
        ok("log", "-1", "--format=%s", cwd=tree, home=home)
        ok("commit", "-q", "--allow-empty", "-m", "operator", cwd=tree, home=home)
    ok("fetch", "-q", "origin", cwd=project, home=home)
    assert ok("log", "-3", "--format=%s", cwd=project, home=home).split() == ["operator", "inside", "first"]
    assert sorted(os.listdir(mark)) == []


def test_a_symlinked_git_directory_is_refused_naming_it(home: Path, listener: int, tmp_path: Path) -> None:
    linked = home / "src" / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(home / "src" / "project" / ".git")
    marker = linked / "ran"
    result = run(home, linked, listener, ["touch", str(marker)])
    assert result.returncode == 125
    assert result.stderr.strip() == textwrap.dedent(f"""
        gitvow run: {linked / '.git'} is a symbolic link, which the sandbox cannot keep in place; replace it with \
the directory it points to (or a `gitdir:` file) and run again""").strip()
    assert not marker.exists()


MADE_INSIDE = """
set -e
git init -q -b main made
git -C made -c user.name=a -c user.email=a@example.test commit -q --allow-empty -m made
git -C made config core.fsmonitor "echo x >$1/made"
git update-index --add --cacheinfo "160000,$(git -C made rev-parse HEAD),made"
"""


def test_a_submodule_made_inside_is_held_aside_after_the_run(home: Path, listener: int, tmp_path: Path) -> None:
    """A submodule the agent makes and adds to the index could not be sealed: after the run its
    .git is renamed aside, so the operator's git status outside runs nothing the agent wrote
    there (its core.fsmonitor), and the repository is kept to inspect and put back."""
    project = home / "src" / "project"
    result = run(home, project, listener, ["/bin/sh", "-c", MADE_INSIDE, "made-inside", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    made = project / "made"
    assert result.stderr.strip().splitlines() == [
        f"gitvow run: {made} is a repository made in the sandbox that the index names as a submodule: "
        f"git outside would obey its configuration, so its .git is held aside as .git.gitvow-untrusted; "
        f"inspect it, then mv {made / '.git.gitvow-untrusted'} {made / '.git'}"]
    assert not (made / ".git").exists() and (made / ".git.gitvow-untrusted" / "config").is_file()
    status = subprocess.run(["git", "-C", str(project), "status"], capture_output=True, text=True, check=False)
    assert status.returncode == 0, status.stderr
    assert not (tmp_path / "made").exists(), "git status outside ran the agent's core.fsmonitor"


# -- a sane git inside ---------------------------------------------------------------------------

GIT_INSIDE = """
set -e
git config --global --list
git init -q fresh
cd fresh
git commit -q --allow-empty -m inside
git log -1 --format='%an <%ae> on %D'
for f in "$HOME/.netrc" "$HOME/.git-credentials"; do cat "$f" 2>&1 || true; done
"""


def test_git_inside_works_for_an_operator_with_a_gitconfig(home: Path, listener: int) -> None:
    (home / ".gitconfig").write_text(textwrap.dedent("""
        [user]
            name = Op Erator
        [include]
            path = ~/.gitconfig-identity
        [init]
            defaultBranch = trunk
        [credential]
            helper = store
        [url "https://op:ghp_operatorsowntoken@github.com/"]
            insteadOf = https://github.com/
    """))
    (home / ".gitconfig-identity").write_text("[user]\n\temail = op@example.test\n")
    (home / ".netrc").write_text("machine github.com password ghp_operatorsowntoken\n")
    (home / ".git-credentials").write_text("https://op:ghp_operatorsowntoken@github.com\n")
    result = run(home, home / "src" / "project", listener, ["/bin/sh", "-c", GIT_INSIDE])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == ["user.name=Op Erator", "user.email=op@example.test", "init.defaultbranch=trunk",
                         "http.proxy=http://coder:secret@127.0.0.1:3128", "Op Erator <op@example.test> on HEAD -> trunk"]
    # the operator's credentials: absent, not unreadable (a tool reading them carries on)
    assert lines[5:] == [f"cat: {home}/.netrc: No such file or directory",
                         f"cat: {home}/.git-credentials: No such file or directory"]
    assert "ghp_operatorsowntoken" not in result.stdout + result.stderr


def test_the_sandboxs_git_identity_can_be_set_in_the_policy(home: Path, listener: int) -> None:
    (home / ".gitconfig").write_text("[user]\n\tname = Op Erator\n\temail = op@example.test\n")
    policy_extra = '[sandbox]\ngit_user_name = "Coding Agent"\ngit_user_email = "agent@example.test"\n'
    result = run(home, home / "src" / "project", listener,
                 ["/bin/sh", "-c", "git config --global user.name; git config --global user.email"], policy_extra)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Coding Agent\nagent@example.test\n"
