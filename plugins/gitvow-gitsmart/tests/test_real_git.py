"""The real ``git`` client against ``git-http-backend``: what it sends classifies as it should."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitvow.request import Request
from gitvow.testing import RecordingServer, Reply, Responder, Seen
from gitvow_gitsmart.adapter import GitSmartAdapter

BACKEND = next((p for p in ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend") if os.path.exists(p)), None)
pytestmark = pytest.mark.skipif(BACKEND is None or shutil.which("git") is None, reason="git and git-http-backend are needed")


def git_backend(root: Path) -> Responder:
    """git-http-backend as a CGI behind the recording server, serving the repositories under ``root``."""

    def respond(seen: Seen) -> Reply:
        env = {
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": seen.route,
            "QUERY_STRING": seen.query,
            "REQUEST_METHOD": seen.method,
            "CONTENT_TYPE": seen.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(seen.body)),
            "HTTP_CONTENT_ENCODING": seen.headers.get("content-encoding", ""),
            "REMOTE_USER": "agent",
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": os.environ.get("PATH", ""),
        }
        out = subprocess.run([BACKEND or ""], input=seen.body, env=env, capture_output=True, check=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers: dict[str, str] = {}
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers[key] = value.strip()
        return status, headers, payload

    return respond


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RecordingServer]:
    root = tmp_path / "srv"
    bare = root / "team" / "app.git"
    bare.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "config", "http.receivepack", "true"], check=True)
    with RecordingServer(git_backend(root)) as srv:
        yield srv


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def classify_all(seen: list[Seen]) -> list[tuple[str, str | None, list[tuple[str, str]]]]:
    adapter = GitSmartAdapter()
    out = []
    for s in seen:
        got = adapter.classify(Request("POST" if s.method == "POST" else s.method, "127.0.0.1", s.route, s.query, s.headers, s.body))
        out.append((got.operations[0], got.repo, [(r.ref, r.kind) for r in got.refs]))
    return out


def test_clone_push_branch_and_delete_classify_with_their_refs(server: RecordingServer, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/team/app.git"
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("hello\n")
    git(work, "add", "README")
    git(work, "commit", "-q", "-m", "first")
    git(work, "push", "-q", url, "main")
    git(work, "commit", "-q", "--allow-empty", "-m", "second")
    git(work, "push", "-q", url, "main", "main:refs/heads/feature")
    git(work, "push", "-q", url, "--delete", "feature")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", url, str(clone))

    got = classify_all(server.seen)
    pushes = [refs for op, _repo, refs in got if op == "git.push" and refs]
    assert pushes == [
        [("refs/heads/main", "create")],
        [("refs/heads/main", "update"), ("refs/heads/feature", "create")],
        [("refs/heads/feature", "delete")],
    ]
    assert {repo for _op, repo, _refs in got} == {"team/app"}
    assert "unknown" not in {op for op, _repo, _refs in got}
    fetches = [op for op, _repo, _refs in got[-2:]]
    assert fetches == ["git.fetch", "git.fetch"]
