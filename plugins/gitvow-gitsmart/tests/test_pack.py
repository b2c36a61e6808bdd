"""The pushed pack, read once: real packs from ``git pack-objects`` (whole objects, OFS and REF
deltas, thin packs), and the packs an attacker would send instead."""

from __future__ import annotations

import hashlib
import os
import subprocess
import zlib
from pathlib import Path

import pytest

from gitvow.request import ZERO_OID, RefUpdate, Request
from gitvow.secrets import scan
from gitvow_gitsmart import classify_git
from gitvow_gitsmart.adapter import pkt
from gitvow_gitsmart.changes import push_change
from gitvow_gitsmart.pack import BLOB, PackError, read_pack
from gitvow_gitsmart.packwrite import pack

AWS = b"AKIA" + b"Q3EGXZJ2MN7WPL4T"  # shaped like an access key id, assembled so no scanner trips on this file


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.test", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.test"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "w"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "README.md").write_text("# app\n")
    (work / "src").mkdir()
    (work / "src" / "big.txt").write_text("".join(f"line {i}\n" for i in range(20000)))
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "base", cwd=work)
    return work


def commit(work: Path, files: dict[str, str | None], message: str = "change") -> str:
    for name, text in files.items():
        path = work / name
        if text is None:
            git("rm", "-q", name, cwd=work)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git("add", name, cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).decode().strip()


def pack_of(work: Path, new: str, old: str, *flags: str) -> bytes:
    revs = f"{new}\n^{old}\n".encode()
    return git("pack-objects", "--stdout", "--revs", *flags, cwd=work, stdin=revs)


def objects_between(work: Path, new: str, old: str) -> set[str]:
    out = git("rev-list", "--objects", new, f"^{old}", cwd=work).decode()
    return {line.split()[0] for line in out.splitlines()}


@pytest.mark.parametrize("flags", [("--delta-base-offset",), (), ("--window=0",)], ids=["ofs-delta", "ref-delta", "whole"])
def test_a_real_pack_is_read_whole_with_its_deltas(repo: Path, flags: tuple[str, ...]) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    big = (repo / "src" / "big.txt").read_text()
    commit(repo, {"src/big.txt": big + "one more\n"})
    new = commit(repo, {"src/big.txt": big + "one more\ntwo more\n", "src/cfg.py": f'KEY = "{AWS.decode()}"\n'})
    data = pack_of(repo, new, base, *flags)
    got = read_pack(data, scan=scan)
    assert set(got.commits) | set(got.trees) | set(got.blobs) == objects_between(repo, new, base)
    assert got.blobs[git("rev-parse", f"{new}:src/big.txt", cwd=repo).decode().strip()] == len(big) + 18
    change = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), got)
    assert change.refs[0].kind == "fast-forward"
    assert set(change.paths) == {"src/big.txt", "src/cfg.py"}
    assert [(s.kind, s.path) for s in change.secrets] == [("aws_access_key", "src/cfg.py")]
    assert AWS.decode() not in repr(change)


def test_a_rewritten_history_is_forced_and_a_deleted_branch_deleted(repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    first = commit(repo, {"a.txt": "a\n"})
    git("reset", "-q", "--hard", base, cwd=repo)
    rewritten = commit(repo, {"b.txt": "b\n"})
    got = read_pack(pack_of(repo, rewritten, base))
    change = push_change((RefUpdate(first, rewritten, "refs/heads/agent/x"), RefUpdate(first, ZERO_OID, "refs/heads/gone")), got)
    assert [r.kind for r in change.refs] == ["forced", "deleted"]
    assert change.operations() == ("ref.force", "ref.delete")
    # an update to a commit the pack does not carry cannot be shown to be a fast-forward
    assert push_change((RefUpdate(first, base, "refs/heads/agent/x"),), read_pack(b"")).refs[0].kind == "forced"


def test_a_secret_in_an_intermediate_commit_is_found_though_a_later_one_removes_it(repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    commit(repo, {"leak.env": f"AWS_ACCESS_KEY_ID={AWS.decode()}\n"})
    new = commit(repo, {"leak.env": None})
    change = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), read_pack(pack_of(repo, new, base), scan=scan))
    assert [s.kind for s in change.secrets] == ["aws_access_key"]


def test_a_workflow_edit_and_a_deletion_in_a_protected_directory_are_changed_paths(repo: Path) -> None:
    base = commit(repo, {".github/workflows/ci.yml": "on: push\n", ".github/workflows/other.yml": "on: pull_request\n"})
    edited = commit(repo, {".github/workflows/ci.yml": "on: push\njobs: {}\n"})
    change = push_change((RefUpdate(base, edited, "refs/heads/x"),), read_pack(pack_of(repo, edited, base)))
    assert change.paths == (".github/workflows/ci.yml",)
    deleted = commit(repo, {".github/workflows/other.yml": None})
    change = push_change((RefUpdate(edited, deleted, "refs/heads/x"),), read_pack(pack_of(repo, deleted, edited)))
    assert change.paths == (".github/workflows/",)


def test_a_thin_pack_is_refused(repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    big = (repo / "src" / "big.txt").read_text()
    new = commit(repo, {"src/big.txt": big + "more\n"})
    thin = pack_of(repo, new, base, "--thin")
    with pytest.raises(PackError, match="thin pack"):
        read_pack(thin)


def _trailer(body: bytes) -> bytes:
    return body + hashlib.sha1(body).digest()


@pytest.mark.parametrize(("data", "error"), [
    (b"PACK" + (2).to_bytes(4, "big") + b"\0" * 36, "checksum"),
    (_trailer(b"NOPE" + (2).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\0" * 12), "not a pack"),
    (_trailer(b"PACK" + (4).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\0" * 12), "version"),
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (2).to_bytes(4, "big") + pack([(BLOB, b"x")])[12:-20]), "fewer objects"),
    (pack([(BLOB, os.urandom(100))])[:-20] + b"junk", "checksum"),
    (_trailer(pack([(BLOB, b"x")])[:-20] + b"junk"), "data after the last object"),
    # a header that says 3 bytes over a stream of 1 MB: never inflated beyond what it declared
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([(BLOB << 4) | 3])
              + zlib.compress(b"\0" * 1_000_000)), "larger than its header"),
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([(5 << 4) | 1]) + zlib.compress(b"x")),
     "not a git object"),
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([(BLOB << 4) | 5]) + b"notzlib!!"),
     "inflate"),
])
def test_malformed_packs_are_refused(data: bytes, error: str) -> None:
    with pytest.raises(PackError, match=error):
        read_pack(data)


def _post(body: bytes, **headers: str) -> Request:
    return Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack", body=body, headers=headers)


def test_a_push_over_the_scan_limit_is_unknown_and_unread(repo: Path) -> None:
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    new = commit(repo, {"x.bin": "x" * 5000})
    body = pkt(f"{base} {new} refs/heads/x\0report-status\n".encode()) + b"0000" + pack_of(repo, new, base)
    got = classify_git(_post(body), pack_limit=100)
    assert got is not None and got.operations == ("unknown",) and got.unknown_code == "change_too_large"
    import gzip

    zipped = classify_git(_post(gzip.compress(body), **{"content-encoding": "gzip"}), pack_limit=100)
    assert zipped is not None and zipped.unknown_code == "change_too_large"
    whole = classify_git(_post(gzip.compress(body), **{"content-encoding": "gzip"}))
    assert whole is not None and whole.operations == ("git.push",) and whole.change is not None
    assert whole.change.paths == ("x.bin",)
