"""The real ``git`` client against ``git-http-backend``: what it sends classifies as it should."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gitvow.request import Request
from gitvow_gitsmart.plugin import GitSmartAdapter

BACKEND = next((p for p in ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend") if os.path.exists(p)), None)
pytestmark = pytest.mark.skipif(BACKEND is None or shutil.which("git") is None, reason="git and git-http-backend are needed")


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class GitServer(ThreadingHTTPServer):
    """git-http-backend behind a plain HTTP server that records every request it serves."""

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.seen: list[Seen] = []


class _Handler(BaseHTTPRequestHandler):
    server: GitServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append(Seen(self.command, path, query, {k.lower(): v for k, v in self.headers.items()}, body))
        env = {
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "REMOTE_USER": "agent",
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": os.environ.get("PATH", ""),
        }
        out = subprocess.run([BACKEND or ""], input=body, env=env, capture_output=True, check=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    root = tmp_path / "srv"
    bare = root / "team" / "app.git"
    bare.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "config", "http.receivepack", "true"], check=True)
    srv = GitServer(root)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def classify_all(seen: list[Seen]) -> list[tuple[str, str | None, list[tuple[str, str]]]]:
    adapter = GitSmartAdapter()
    out = []
    for s in seen:
        got = adapter.classify(Request("POST" if s.method == "POST" else s.method, "127.0.0.1", s.path, s.query, s.headers, s.body))
        out.append((got.operations[0], got.repo, [(r.ref, r.kind) for r in got.refs]))
    return out


def test_clone_push_branch_and_delete_classify_with_their_refs(server: GitServer, tmp_path: Path) -> None:
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
