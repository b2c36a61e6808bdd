"""The first push on top of a clone: whether a path rule could name a deletion the new trees
alone do not show (decided from the pack, no lookup), and the parent's trees fetched from a
real ``git upload-pack`` (protocol v2, ``filter blob:none``, ``deepen 1``) to diff exactly."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitvow.change import Change
from gitvow.change_rules import DEFAULT_RULES, STAGE, ChangeRules
from gitvow.githead import trees_target
from gitvow.request import RefUpdate
from gitvow.targets import Fetch
from gitvow_gitsmart.changes import KnownTrees, push_change
from gitvow_gitsmart.classify import KNOWN_TREES
from gitvow_gitsmart.oldtrees import answer_pack, fetch_request, resolve_trees
from gitvow_gitsmart.pack import PackError, read_pack

WORKFLOWS = ChangeRules(paths=((".github/workflows/**", STAGE),))


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.test", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.test"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=True).stdout


def commit(work: Path, files: dict[str, str | None], message: str = "change") -> str:
    for name, text in files.items():
        if text is None:
            git("rm", "-q", name, cwd=work)
            continue
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
        git("add", name, cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).decode().strip()


def pack_of(work: Path, new: str, old: str) -> bytes:
    return git("pack-objects", "--stdout", "--revs", cwd=work, stdin=f"{new}\n^{old}\n".encode())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "w"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    commit(work, {"README.md": "# app\n", "CODEOWNERS": "* @team\n", ".github/workflows/ci.yml": "on: push\n",
                  "src/a.py": "a\n"}, "base")
    return work


def _first_push(repo: Path, files: dict[str, str | None]) -> tuple[str, str, Change]:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    new = commit(repo, files)
    return base, new, push_change((RefUpdate(base, new, "refs/heads/agent/x"),),
                                  read_pack(pack_of(repo, new, base)), KnownTrees())


def test_a_deletion_beside_new_content_could_touch_a_rule_and_names_the_parent(repo: Path) -> None:
    base, _, change = _first_push(repo, {".github/workflows/ci.yml": None, "src/x.py": "x\n"})
    assert change.old_commits == (base,)
    assert ".github/workflows/ci.yml" not in change.paths  # the new trees alone cannot show it
    assert WORKFLOWS.could_hide(change) and DEFAULT_RULES.could_hide(change)


def test_a_new_workflow_beside_a_deleted_one_could_touch_the_rule(repo: Path) -> None:
    _, _, change = _first_push(repo, {".github/workflows/ci.yml": None, ".github/workflows/new.yml": "on: x\n"})
    assert WORKFLOWS.could_hide(change)


def test_a_push_that_stays_out_of_the_protected_directories_needs_no_lookup(repo: Path) -> None:
    _, _, change = _first_push(repo, {"src/y.py": "y\n", "docs/z.md": "z\n"})
    assert change.read_alone and not WORKFLOWS.could_hide(change)
    # a pattern naming a file at any depth could be inside any deleted directory: asked
    assert DEFAULT_RULES.could_hide(change)


def test_a_known_parent_reads_nothing_alone(repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    new = commit(repo, {"CODEOWNERS": None, "src/x.py": "x\n"})
    known = KnownTrees()
    known.learn(read_pack(git("pack-objects", "--stdout", "--revs", cwd=repo, stdin=f"{base}\n".encode())))
    change = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), read_pack(pack_of(repo, new, base)), known)
    assert change.read_alone == () and change.old_commits == () and "CODEOWNERS" in change.paths


def _upload_pack(bare: Path, *, filters: bool) -> Fetch:
    """A Fetch answered by ``git upload-pack --stateless-rpc`` as ``git http-backend`` runs it."""

    def fetch(method: str, at: str, body: bytes) -> tuple[int, bytes]:
        assert method == "POST" and at.endswith("/git-upload-pack")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROTOCOL": "version=2",
               "HOME": str(bare), "GIT_CONFIG_NOSYSTEM": "1"}
        done = subprocess.run(["git", "-c", f"uploadpack.allowFilter={str(filters).lower()}",
                               "-c", "uploadpack.allowAnySHA1InWant=true", "upload-pack", "--stateless-rpc",
                               str(bare)], input=body, env=env, capture_output=True, check=False)
        return (200 if done.returncode == 0 else 500), done.stdout

    return fetch


def test_the_parents_trees_fetched_from_upload_pack_make_the_diff_exact(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "forge.git"
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=tmp_path)
    base, new, alone = _first_push(repo, {"CODEOWNERS": None, ".github/workflows/ci.yml": None,
                                          "src/x.py": "x\n"})
    target = trees_target(base, "/team/app.git")
    answers = resolve_trees([target], _upload_pack(bare, filters=True))
    assert target in answers
    assert KNOWN_TREES.root(base) is not None
    exact = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), read_pack(pack_of(repo, new, base)),
                        KNOWN_TREES)
    assert {"CODEOWNERS", ".github/workflows/ci.yml", "src/x.py"} == set(exact.paths)
    assert exact.read_alone == () and not DEFAULT_RULES.could_hide(exact)
    assert "CODEOWNERS" not in alone.paths


def test_a_forge_without_filters_gives_no_trees(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "forge.git"
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=tmp_path)
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    target = trees_target(base, "/team/app.git")
    try:
        answers = resolve_trees([target], _upload_pack(bare, filters=False))
    except PackError:
        answers = {}
    assert target not in answers
    assert b"filter blob:none" in fetch_request(base)


def test_an_answer_without_a_pack_is_refused() -> None:
    with pytest.raises(PackError):
        answer_pack(b"0008NAK\n0000")
    with pytest.raises(PackError):
        answer_pack(b"000dERR nope\n0000")


def test_an_empty_commit_on_a_clone_asks_for_the_parents_trees_and_then_changes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    """The first push of an empty commit carries no tree (the forge has it): the parent's trees,
    fetched, show that it changes nothing; before that, the root is read alone."""
    bare = tmp_path / "forge.git"
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=tmp_path)
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    git("commit", "-q", "--allow-empty", "-m", "empty", cwd=repo)
    new = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    update = (RefUpdate(base, new, "refs/heads/agent/x"),)
    alone = push_change(update, read_pack(pack_of(repo, new, base)), KnownTrees())
    assert alone.unestablished == "" and alone.old_commits == (base,) and DEFAULT_RULES.could_hide(alone)
    resolve_trees([trees_target(base, "/team/app.git")], _upload_pack(bare, filters=True))
    exact = push_change(update, read_pack(pack_of(repo, new, base)), KNOWN_TREES)
    assert exact.unestablished == "" and exact.read_alone == () and exact.paths == ()
