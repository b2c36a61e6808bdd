"""Trees read as git reads them (``gitvow_gitsmart.changes.tree_entries``): a zero-padded mode
is git's tree mode, and what git's own fsck refuses (a name given twice, a ``.git`` entry in any
case) is refused rather than read one way while git reads it another. Each tree is also written
with real git (``hash-object --literally``) and shown to git, so the reading is git's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitvow_gitsmart.changes import tree_entries
from gitvow_gitsmart.pack import PackError

BLOB = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")  # the empty blob


def entry(mode: bytes, name: bytes, oid: bytes = BLOB) -> bytes:
    return mode + b" " + name + b"\0" + oid


def git(repo: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    assert git(tmp_path, "init", "-q", "--bare", "r.git").returncode == 0
    repo = tmp_path / "r.git"
    assert git(repo, "hash-object", "-w", "--stdin", data=b"").returncode == 0
    return repo


def written(repo: Path, raw: bytes) -> str:
    done = git(repo, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", data=raw)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


def test_a_zero_padded_tree_mode_is_the_tree_mode_git_reads(repo: Path) -> None:
    sub = written(repo, entry(b"100644", b"ci.yml"))
    raw = entry(b"040000", b"workflows", bytes.fromhex(sub))
    assert [(m, n) for m, n, _ in tree_entries(raw)] == [(b"40000", "workflows")]
    listed = git(repo, "ls-tree", "-r", written(repo, raw)).stdout.decode()
    assert "workflows/ci.yml" in listed  # git reads it as a directory too


@pytest.mark.parametrize(("raw", "why"), [
    (entry(b"100644", b"a") + entry(b"100755", b"a"), "twice"),
    (entry(b"100644", b".git"), ".git"),
    (entry(b"100644", b".GIT"), ".git"),
    (entry(b"10064x", b"a"), "octal"),
    (entry(b"100648", b"a"), "octal"),
])
def test_what_git_fsck_refuses_is_refused(repo: Path, raw: bytes, why: str) -> None:
    with pytest.raises(PackError, match=why):
        list(tree_entries(raw))
    if why != "octal":
        tree = written(repo, raw)
        fsck = git(repo, "fsck", "--strict", "--no-dangling", "--full")
        assert fsck.returncode != 0 or tree.encode() in fsck.stdout + fsck.stderr, (raw, fsck)
