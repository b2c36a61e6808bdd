"""Reading a pushed pack: a ~50 MB push through the gitsmart classifier on one core.

The push is built with the real ``git`` (``pack-objects`` with its default delta search):
400 new text files of ~125 KB each, one of them a later revision of another (a delta), one
workflow file. ``classify_git`` reads the commands, verifies the pack's checksum, inflates
every object, resolves the deltas, scans every blob for credentials and computes the ref
kinds and changed paths: everything the proxy does to a push before its stages run.

Run: ``pytest benchmarks/bench_pack.py --benchmark-only`` (figures in docs/benchmarks.md,
"Reading a pushed pack"). CI runs it with ``--benchmark-disable``.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from gitvow.request import Request
from gitvow_gitsmart import classify_git
from gitvow_gitsmart.adapter import pkt

FILES = 400
LINES = 2500  # ~50 bytes a line: ~125 KB a file, ~50 MB in all


def _git(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.test", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.test"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def push(tmp_path_factory: pytest.TempPathFactory) -> Request:
    work = tmp_path_factory.mktemp("bench-pack")
    _git("init", "-q", "-b", "main", cwd=work)
    (work / "README.md").write_text("# bench\n")
    _git("add", ".", cwd=work)
    _git("commit", "-q", "-m", "base", cwd=work)
    base = _git("rev-parse", "HEAD", cwd=work).decode().strip()
    rng = random.Random(7)
    words = [f"word{i}" for i in range(5000)]
    (work / "src").mkdir()
    for n in range(FILES):
        text = "\n".join(" ".join(rng.choice(words) for _ in range(6)) for _ in range(LINES))
        (work / "src" / f"f{n:03d}.txt").write_text(text)
    (work / ".github" / "workflows").mkdir(parents=True)
    (work / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    _git("add", ".", cwd=work)
    _git("commit", "-q", "-m", "many files", cwd=work)
    with (work / "src" / "f000.txt").open("a") as f:
        f.write("\none more line\n")
    _git("add", ".", cwd=work)
    _git("commit", "-q", "-m", "a revision", cwd=work)
    new = _git("rev-parse", "HEAD", cwd=work).decode().strip()
    pack = _git("pack-objects", "--stdout", "--revs", "--delta-base-offset", cwd=work,
                stdin=f"{new}\n^{base}\n".encode())
    body = pkt(f"{base} {new} refs/heads/agent/bench\0report-status side-band-64k\n".encode()) + b"0000" + pack
    return Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack", body=body)


def test_read_a_50mb_push(benchmark, push: Request) -> None:  # type: ignore[no-untyped-def]
    result = benchmark.pedantic(classify_git, args=(push,), rounds=3, iterations=1, warmup_rounds=0)
    assert result is not None and result.change is not None
    assert result.operations == ("git.push",) and len(result.change.paths) == FILES + 1
    assert result.change.refs[0].kind == "fast-forward"
    benchmark.extra_info["body_mb"] = round(len(push.body) / 1e6, 1)
    benchmark.extra_info["content_mb"] = round(result.change.added_bytes / 1e6, 1)
