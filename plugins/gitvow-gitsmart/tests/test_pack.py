"""The pushed pack, read once: real packs from ``git pack-objects`` (whole objects, OFS and REF
deltas, thin packs), and the packs an attacker would send instead."""

from __future__ import annotations

import hashlib
import os
import subprocess
import zlib
from pathlib import Path

import pytest

from gitvow.change_rules import DEFAULT_RULES
from gitvow.request import ZERO_OID, RefUpdate, Request
from gitvow.secrets import scan
from gitvow_gitsmart import classify_git
from gitvow_gitsmart.adapter import pkt
from gitvow_gitsmart.changes import KnownTrees, push_change
from gitvow_gitsmart.pack import BLOB, COMMIT, PackError, read_pack
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
    # oversized headers: a megabyte of continuation bytes is refused at the 65th bit, not summed
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes([(BLOB << 4) | 0x8F])
              + b"\xff" * 1_000_000 + b"\x01"), "header too long"),
    (_trailer(b"PACK" + (2).to_bytes(4, "big") + (2).to_bytes(4, "big") + pack([(BLOB, b"x")])[12:-20]
              + bytes([(6 << 4) | 1]) + b"\xff" * 1_000_000 + b"\x01"), "offset too long"),
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


def test_an_oversized_delta_size_is_refused_not_summed() -> None:
    from gitvow_gitsmart.pack import apply_delta

    with pytest.raises(PackError, match="delta size too long"):
        apply_delta(b"base", b"\xff" * 1_000_000 + b"\x01")


def test_a_ref_delta_to_an_object_the_forge_has_is_a_thin_pack_refused() -> None:
    """no-thin violated by hand: a REF_DELTA naming a base that is not in the pack."""
    delta = bytes([4, 5]) + bytes([0x90, 4]) + bytes([1]) + b"x"  # 4 bytes → 5: copy 4 from 0, insert "x"
    entry = bytes([(7 << 4) | len(delta)]) + bytes.fromhex("ab" * 20) + zlib.compress(delta)
    body = _trailer(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + entry)
    with pytest.raises(PackError, match="thin pack"):
        read_pack(body)


def test_a_truncated_pack_is_refused_at_every_length(repo: Path) -> None:
    """Cut anywhere, a real pack never reads as a smaller valid one."""
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    new = commit(repo, {"a.txt": "a" * 300, "b/c.txt": "c" * 200})
    whole = pack_of(repo, new, base)
    for cut in range(12, len(whole), max(1, len(whole) // 97)):
        with pytest.raises(PackError):
            read_pack(whole[:cut])


def _known_after(repo: Path, tip: str, base: str) -> KnownTrees:
    """What the proxy knows once it has read the push of ``base..tip``'s objects."""
    known = KnownTrees()
    known.learn(read_pack(pack_of(repo, tip, base)))
    return known


def test_a_deletion_beside_new_content_is_its_own_path_once_the_old_tree_is_known(repo: Path) -> None:
    """``CODEOWNERS`` deleted at the root in the same push as a new ``src/x.py``: with the old
    trees known (an earlier push carried them) the diff names it exactly."""
    root = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    base = commit(repo, {"CODEOWNERS": "* @team\n", ".github/workflows/ci.yml": "on: push\n"})
    known = _known_after(repo, base, root)
    new = commit(repo, {"CODEOWNERS": None, ".github/workflows/ci.yml": None, ".github/workflows/new.yml": "on: x\n",
                        "src/x.py": "x = 1\n"})
    pushed = read_pack(pack_of(repo, new, base))
    exact = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), pushed, known)
    assert set(exact.paths) == {"CODEOWNERS", ".github/workflows/ci.yml", ".github/workflows/new.yml", "src/x.py"}
    # without the old trees the pack alone cannot name the deletions beside new content
    alone = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), pushed)
    assert "CODEOWNERS" not in alone.paths and ".github/workflows/new.yml" in alone.paths


def test_renames_and_mode_changes_are_changed_paths(repo: Path) -> None:
    root = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    base = commit(repo, {"scripts/deploy.yml": "on: push\n", "tools/run.sh": "echo\n", "README.md": "# app\n"})
    known = _known_after(repo, base, root)
    (repo / ".github" / "workflows").mkdir(parents=True)
    git("mv", "scripts/deploy.yml", ".github/workflows/deploy.yml", cwd=repo)  # content the forge has
    git("update-index", "--chmod=+x", "tools/run.sh", cwd=repo)
    new = commit(repo, {"src/added.py": "y = 2\n"}, "move and chmod")
    change = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), read_pack(pack_of(repo, new, base)), known)
    assert set(change.paths) == {"scripts/deploy.yml", ".github/workflows/deploy.yml", "tools/run.sh",
                                 "src/added.py"}, change.paths


def test_every_commit_of_a_push_is_diffed_against_its_parent_in_the_pack(repo: Path) -> None:
    """A later commit's deletion is exact without asking anyone: its parent is in the pack."""
    base = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    commit(repo, {"CODEOWNERS": "* @team\n", "src/a.py": "a\n"})
    new = commit(repo, {"CODEOWNERS": None, "src/b.py": "b\n"})
    change = push_change((RefUpdate(base, new, "refs/heads/agent/x"),), read_pack(pack_of(repo, new, base)))
    assert {"CODEOWNERS", "src/a.py", "src/b.py"} <= set(change.paths)


def test_a_commit_whose_tree_is_the_forges_and_not_its_parents_is_unestablished(repo: Path) -> None:
    """A return to an earlier state (the tree of an older commit, which the pack does not carry)
    changes paths the pack cannot show: refused, not read as no change, once the parent's trees
    are known; before that, the forge is to be asked for them (the root counts as read alone)."""
    first = git("rev-parse", "HEAD", cwd=repo).decode().strip()
    second = commit(repo, {"CODEOWNERS": "* @team\n"})
    old_tree = git("rev-parse", f"{first}^{{tree}}", cwd=repo).decode().strip()
    back = git("commit-tree", old_tree, "-p", second, "-m", "back", cwd=repo).decode().strip()
    pushed = read_pack(pack([(COMMIT, git("cat-file", "commit", back, cwd=repo))]))  # all git would send
    unknown = push_change((RefUpdate(second, back, "refs/heads/agent/x"),), pushed)
    assert unknown.unestablished == "" and unknown.old_commits == (second,)
    assert unknown.read_alone == (("", frozenset()),) and DEFAULT_RULES.could_hide(unknown)
    known = _known_after(repo, second, first)
    change = push_change((RefUpdate(second, back, "refs/heads/agent/x"),), pushed, known)
    assert "neither in the pack nor its parent's" in change.unestablished
    same = git("commit-tree", git("rev-parse", f"{second}^{{tree}}", cwd=repo).decode().strip(), "-p", second,
               "-m", "empty", cwd=repo).decode().strip()
    empty = read_pack(pack([(COMMIT, git("cat-file", "commit", same, cwd=repo))]))
    assert push_change((RefUpdate(second, same, "refs/heads/agent/x"),), empty, known).unestablished == ""
