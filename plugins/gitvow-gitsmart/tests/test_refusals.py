"""A refusal in git's own protocol (:mod:`gitvow_gitsmart.refusals`): what the real ``git``
prints for it, and that no refusal ever reports a ref as updated."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitvow.request import ZERO_OID, Request
from gitvow.testing import RecordingServer, Reply, Seen
from gitvow_gitsmart.adapter import GitSmartAdapter, pkt, push_body
from gitvow_gitsmart.refusals import RESULT

LINE = "gitvow refused git.push on team/app (POST /team/app.git/git-receive-pack): branch main is protected; " \
       "push to another branch and open a pull request. reason=branch_protected"
A, B = "a" * 40, "b" * 40


def packets(body: bytes) -> list[bytes | None]:
    """The pkt-lines of ``body`` (None for a flush)."""
    out: list[bytes | None] = []
    pos = 0
    while pos < len(body):
        size = int(body[pos : pos + 4], 16)
        out.append(None if size == 0 else body[pos + 4 : pos + size])
        pos += size or 4
    return out


def refuse(method: str, path: str, body: bytes = b"", *, headers: dict[str, str] | None = None,
           query: str = "") -> tuple[int | None, str, bytes]:
    request = Request(method, "git.example.test", path, query, headers or {}, body)
    answer = GitSmartAdapter().refusal_answer(request, LINE, "branch_protected")
    return answer.status, answer.content_type, answer.body


def test_a_push_with_side_band_gets_the_line_on_band_2_and_every_ref_ng_on_band_1() -> None:
    body = push_body((A, B, "refs/heads/main"), (ZERO_OID, B, "refs/heads/other"), (A, ZERO_OID, "refs/heads/old"))
    status, kind, answer = refuse("POST", "/team/app.git/git-receive-pack", body)
    assert (status, kind) == (200, RESULT)
    top = packets(answer)
    assert top[0] == b"\x02" + LINE.encode() + b"\n"
    assert top[-1] is None
    report = b"".join(p[1:] for p in top[1:-1] if p is not None and p[:1] == b"\x01")
    assert packets(report) == [b"unpack ok\n", b"ng refs/heads/main gitvow: branch_protected\n",
                               b"ng refs/heads/other gitvow: branch_protected\n",
                               b"ng refs/heads/old gitvow: branch_protected\n", None]


def test_without_side_band_the_ng_reason_is_the_whole_line() -> None:
    line = f"{A} {B} refs/heads/main\0report-status-v2 agent=x\n".encode()
    status, kind, answer = refuse("POST", "/team/app.git/git-receive-pack", pkt(line) + b"0000")
    assert (status, kind) == (200, RESULT)
    assert packets(answer) == [b"unpack ok\n", b"ng refs/heads/main " + LINE.encode() + b"\n", None]


def test_a_gzipped_push_is_answered_from_its_commands() -> None:
    body = gzip.compress(push_body((A, B, "refs/heads/main")))
    status, _, answer = refuse("POST", "/team/app.git/git-receive-pack", body, headers={"content-encoding": "gzip"})
    assert status == 200 and b"ng refs/heads/main gitvow: branch_protected\n" in answer


@pytest.mark.parametrize("body", [
    pkt(f"{A} {B} refs/heads/main\0side-band-64k\n".encode()) + b"0000",  # no report asked: it could not tell
    b"zzzz garbage",
    pkt(f"{A} {B} refs/heads/main\0report-status\n".encode()),  # no flush: commands unread
])
def test_a_push_that_cannot_be_answered_in_a_report_keeps_the_refusal_status(body: bytes) -> None:
    status, kind, answer = refuse("POST", "/team/app.git/git-receive-pack", body)
    assert (status, kind, answer) == (None, "text/plain; charset=utf-8", (LINE + "\n").encode())


def test_info_refs_is_an_err_packet_after_the_service_header() -> None:
    for service in ("git-receive-pack", "git-upload-pack"):
        status, kind, answer = refuse("GET", "/team/app.git/info/refs", query=f"service={service}")
        assert (status, kind) == (200, f"application/x-{service}-advertisement")
        assert packets(answer) == [f"# service={service}\n".encode(), None, b"ERR " + LINE.encode() + b"\n"]
    assert refuse("GET", "/team/app.git/info/refs")[0] is None  # dumb HTTP: plain text at the proxy's status
    assert refuse("POST", "/team/app.git/git-upload-pack", b"0000")[0] is None


def test_a_line_break_in_the_message_never_splits_a_packet() -> None:
    request = Request("POST", "git.example.test", "/team/app.git/git-receive-pack", "", {},
                      pkt(f"{A} {B} refs/heads/main\0report-status\n".encode()) + b"0000")
    answer = GitSmartAdapter().refusal_answer(request, "one\ntwo\0three", "x")
    assert packets(answer.body) == [b"unpack ok\n", b"ng refs/heads/main one two three\n", None]


# -- the real git client ---------------------------------------------------------------------

BACKEND = next((p for p in ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend")
                if os.path.exists(p)), None)
needs_git = pytest.mark.skipif(BACKEND is None or shutil.which("git") is None,
                               reason="git and git-http-backend are needed")


def _refusing(root: Path) -> RecordingServer:
    """git-http-backend for reads; every push (and ``/refused.git/info/refs``) refused in
    git's protocol by the adapter, as the proxy answers."""

    def respond(seen: Seen) -> Reply:
        request = Request(seen.method, "127.0.0.1", seen.route, seen.query, seen.headers, seen.body)
        if seen.route.endswith("/git-receive-pack") or seen.route.startswith("/refused.git/"):
            answer = GitSmartAdapter().refusal_answer(request, LINE, "branch_protected")
            return answer.status or 403, {"Content-Type": answer.content_type}, answer.body
        env = {"GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": seen.route, "REMOTE_USER": "agent",
               "QUERY_STRING": seen.query, "REQUEST_METHOD": seen.method, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": seen.headers.get("content-type", ""), "CONTENT_LENGTH": str(len(seen.body)),
               "GIT_PROTOCOL": seen.headers.get("git-protocol", ""), "PATH": os.environ.get("PATH", "")}
        out = subprocess.run([BACKEND or ""], input=seen.body, env=env, capture_output=True, check=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n") if ": " in line)
        headers.pop("Status", None)
        return 200, headers, payload

    return RecordingServer(respond)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RecordingServer]:
    bare = tmp_path / "srv" / "team" / "app.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    with _refusing(tmp_path / "srv") as srv:
        yield srv


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd),
           "LC_ALL": "C"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True, text=True, timeout=60)


@needs_git
@pytest.mark.parametrize("version", ["0", "2"])
def test_git_prints_the_line_and_remote_rejected(server: RecordingServer, tmp_path: Path, version: str) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/team/app.git"
    _git(tmp_path, "init", "-q", "-b", "main", "work")
    work = tmp_path / "work"
    _git(work, "commit", "-q", "--allow-empty", "-m", "first")
    result = _git(work, "-c", f"protocol.version={version}", "push", url, "main", "main:refs/heads/two", check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        f"remote: {LINE}        ",
        f"To {url}",
        " ! [remote rejected] main -> main (gitvow: branch_protected)",
        " ! [remote rejected] main -> two (gitvow: branch_protected)",
        f"error: failed to push some refs to '{url}'",
    ]
    refused = _git(work, "-c", f"protocol.version={version}", "push",
                   f"http://127.0.0.1:{server.server_address[1]}/refused.git", "main", check=False)
    assert (refused.returncode, refused.stderr) == (128, f"fatal: remote error: {LINE}\n")
