"""The gate server answers exactly as the hook decides in-process, and a server the client cannot
trust is never asked.

Every call runs the hook as the agent does: a subprocess with Claude Code's ``PreToolUse`` JSON
on stdin. The subprocess is ``gitvow_gate.hook_client.main``, which also reports which modules
it imported (to a file), so each test can tell a served answer (``gitvow_gate.invocation``
never imported) from one decided in-process. The answer compared is the exact bytes printed
and the exit status.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitvow.plugins import installed
from gitvow_gate import hook_client

from .conftest import hook_argv

PROBE = """
import sys
before = set(sys.modules)
from gitvow_gate.hook_client import main
code = main(sys.argv[2:])
sys.stdout.flush()
with open(sys.argv[1], "w") as fh:
    fh.write("\\n".join(sorted(set(sys.modules) - before)))
sys.exit(code)
"""

github = pytest.mark.skipif("github" not in installed().adapters, reason="the github adapter is not installed here")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
NOBODY = 65534
#: What a hook call may import when the server answers: the client and the standard library.
CLIENT_MODULES = {"gitvow_gate", "gitvow_gate.hook_client"}


@dataclass(frozen=True)
class Answer:
    code: int
    stdout: str
    stderr: str
    served: bool  # decided by the server (the engine never imported here)
    imported: frozenset[str]


def claude(command: str, repo: Path) -> str:
    return json.dumps({"session_id": "s", "transcript_path": "", "cwd": str(repo), "permission_mode": "default",
                       "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}})


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """The test environment with the gate server on, its socket under this test's own runtime directory."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    own = {**env, "GITVOW_GATE_SERVER": "on", "XDG_RUNTIME_DIR": str(run), "GITVOW_GATE_IDLE": "120"}
    yield own
    subprocess.run([*hook_argv(), "--stop"], env=own, capture_output=True, timeout=30, check=False)


def call(command: str, repo: Path, env: dict[str, str], tmp_path: Path) -> Answer:
    report = tmp_path / f"imported-{time.monotonic_ns()}.txt"
    done = subprocess.run([sys.executable, "-c", PROBE, str(report), "--agent", "claude", "PreToolUse"],
                          input=claude(command, repo), capture_output=True, text=True, cwd=repo, env=env, timeout=60,
                          check=False)
    imported = frozenset(report.read_text().split()) if report.exists() else frozenset()
    return Answer(done.returncode, done.stdout, done.stderr, "gitvow_gate.invocation" not in imported, imported)


def in_process(command: str, repo: Path, env: dict[str, str], tmp_path: Path) -> Answer:
    answer = call(command, repo, {**env, "GITVOW_GATE_SERVER": "off"}, tmp_path)
    assert not answer.served
    return answer


def same(a: Answer, b: Answer) -> bool:
    return (a.code, a.stdout, a.stderr) == (b.code, b.stdout, b.stderr)


def wait_for_server(env: dict[str, str]) -> None:
    path = hook_client.socket_path(env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(path)
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no gate server came up at {path}")


def served_answer(command: str, repo: Path, env: dict[str, str], tmp_path: Path) -> Answer:
    """The answer once the server is up (the first call starts it and decides in-process)."""
    call(command, repo, env, tmp_path)
    wait_for_server(env)
    answer = call(command, repo, env, tmp_path)
    assert answer.served, "the server did not answer"
    return answer


@pytest.fixture
def merge_policy(repo: Path, write_policy: Callable[..., Path]) -> Path:
    return write_policy(repo, {"agents": {"claude": {"mode": "issues_prs_merge"}},
                               "bash_deny": [{"pattern": "rm -rf /", "reason": "no"}]})


# -- the same answer, and nothing but the standard library in the hook's process -----------------


@github
def test_the_server_answers_exactly_as_the_hook_decides_in_process(repo: Path, merge_policy: Path,
                                                                  served: dict[str, str], tmp_path: Path) -> None:
    for command in ("ls -la", "gh pr merge 3", "rm -rf /"):
        alone = in_process(command, repo, served, tmp_path)
        answer = served_answer(command, repo, served, tmp_path)
        assert same(answer, alone), (command, answer, alone)
    merge = call("gh pr merge 3", repo, served, tmp_path)
    assert merge.served and json.loads(merge.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert call("ls -la", repo, served, tmp_path).stdout == ""  # Claude Code's allow: nothing printed


@github
def test_a_served_call_imports_only_the_standard_library(repo: Path, merge_policy: Path, served: dict[str, str],
                                                         tmp_path: Path) -> None:
    for command in ("ls -la", "gh pr merge 3"):
        answer = served_answer(command, repo, served, tmp_path)
        ours = {m for m in answer.imported if m.partition(".")[0] not in sys.stdlib_module_names}
        assert ours == CLIENT_MODULES, ours
        assert "json" not in answer.imported and "subprocess" not in answer.imported


@github
def test_the_server_and_an_in_process_call_share_the_plugin_index(repo: Path, merge_policy: Path,
                                                                  served: dict[str, str], tmp_path: Path) -> None:
    """The server keys the plugin index as the hook does: neither makes the other discover plugins again."""
    served_answer("gh pr merge 3", repo, served, tmp_path)  # the server read (or rewrote) the index
    alone = in_process("gh pr merge 3", repo, served, tmp_path)
    assert not {"importlib.metadata", "pluggy", "gitvow.plugins"} & alone.imported, alone.imported


@github
def test_a_policy_edit_is_in_force_on_the_next_call(repo: Path, merge_policy: Path, served: dict[str, str],
                                                    tmp_path: Path, write_policy: Callable[..., Path]) -> None:
    refused = served_answer("gh pr merge 3", repo, served, tmp_path)
    assert json.loads(refused.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    write_policy(repo, {"bash_deny": [{"pattern": "gh pr merge", "reason": "merges are for humans"}]})
    now = call("gh pr merge 3", repo, served, tmp_path)
    assert now.served
    assert same(now, in_process("gh pr merge 3", repo, served, tmp_path))
    reason = json.loads(now.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason == "gitvow: BLOCKED by policy (merges are for humans)."
    write_policy(repo, {})  # no [agents.claude]: the built-in rules ask about a GitHub mutation
    asked = call("gh pr merge 3", repo, served, tmp_path)
    assert asked.served
    assert json.loads(asked.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert same(asked, in_process("gh pr merge 3", repo, served, tmp_path))


def test_a_server_of_another_plugin_set_never_answers(repo: Path, merge_policy: Path, served: dict[str, str],
                                                      tmp_path: Path) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    other = {**served, "GITVOW_DISABLE_PLUGINS": "gitvow-nonexistent"}
    answer = call("rm -rf /", repo, other, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, other, tmp_path))
    # that server stopped; the next call starts one on the new set, which then answers
    call("rm -rf /", repo, other, tmp_path)
    wait_for_server(other)
    assert call("rm -rf /", repo, other, tmp_path).served


# -- bad input: each is refused, and the call decided in-process ----------------------------------


def runtime_of(env: dict[str, str]) -> Path:
    return Path(hook_client.socket_path(env)).parent


def test_a_stale_socket_is_decided_in_process_and_replaced(repo: Path, merge_policy: Path, served: dict[str, str],
                                                           tmp_path: Path) -> None:
    path = hook_client.socket_path(served)
    runtime_of(served).mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    dead.bind(path)
    os.umask(previous)
    dead.close()  # the file stays; nobody listens
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    wait_for_server(served)
    assert call("rm -rf /", repo, served, tmp_path).served


@pytest.mark.parametrize("what", ["socket", "directory"])
@pytest.mark.parametrize("mode", [0o666, 0o660])
def test_a_socket_or_directory_others_may_write_is_refused(repo: Path, merge_policy: Path, served: dict[str, str],
                                                           tmp_path: Path, what: str, mode: int) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    path = hook_client.socket_path(served)
    target = path if what == "socket" else os.path.dirname(path)
    os.chmod(target, mode | (0o100 if what == "directory" else 0))
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    os.chmod(target, 0o700 if what == "directory" else 0o600)
    assert call("rm -rf /", repo, served, tmp_path).served


@as_root
@pytest.mark.parametrize("what", ["socket", "directory"])
def test_a_socket_or_directory_of_another_user_is_refused(repo: Path, merge_policy: Path, served: dict[str, str],
                                                          tmp_path: Path, what: str) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    path = hook_client.socket_path(served)
    target = path if what == "socket" else os.path.dirname(path)
    os.chown(target, NOBODY, NOBODY)
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    os.chown(target, os.getuid(), os.getgid())


FORGED = hook_client.frame([b"ok", b"0", b"", b""])  # "allow", from a server the client must not trust

def impostor(listener: socket.socket) -> int:
    """A child process that listens on ``listener`` as another user (the peer credentials a client
    sees are taken at ``listen``) and answers every call with a forged allow; returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: never returns into pytest
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        listener.listen(8)
        while True:
            conn, _ = listener.accept()
            conn.recv(1 << 20)
            conn.sendall(FORGED)
            conn.close()
    finally:
        os._exit(0)


@as_root
# the forked child only makes system calls (setuid, listen, accept, send) and never returns to Python code that
# another thread could hold a lock in
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_server_of_another_uid_is_never_believed(repo: Path, merge_policy: Path, served: dict[str, str],
                                                   tmp_path: Path) -> None:
    """The socket file passes every check (ours, 0600); the process listening on it is another user's."""
    path = hook_client.socket_path(served)
    runtime_of(served).mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    listener.bind(path)
    os.umask(previous)
    pid = impostor(listener)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until it listens
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(path)
                    break
                except ConnectionRefusedError:
                    time.sleep(0.05)
        assert hook_client.check_private(path, kind="socket") is None  # the file itself looks right
        answer = call("rm -rf /", repo, served, tmp_path)
        assert not answer.served
        assert json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        listener.close()


def fake_server(path: str, answer: Callable[[socket.socket], None]) -> Callable[[], None]:
    """A server of this user at ``path`` that answers each connection with ``answer``; returns its stop."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    listener.bind(path)
    os.umask(previous)
    listener.listen(8)
    listener.settimeout(0.2)
    stopping = threading.Event()

    def loop() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                answer(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        thread.join()
        listener.close()

    return stop


def garbage(conn: socket.socket) -> None:
    conn.recv(1 << 20)
    conn.sendall(b"2\n2\nok\n999\nnot a frame")


def silence(conn: socket.socket) -> None:
    conn.recv(1 << 20)
    time.sleep(hook_client.TIMEOUT + 1.5)  # longer than the client waits


def another_protocol(conn: socket.socket) -> None:
    conn.recv(1 << 20)
    conn.sendall(json.dumps({"decision": "allow"}).encode())


@pytest.mark.parametrize("behaviour", [garbage, silence, another_protocol], ids=lambda f: f.__name__)
def test_a_server_that_answers_garbage_or_nothing_is_decided_in_process(repo: Path, merge_policy: Path,
                                                                        served: dict[str, str], tmp_path: Path,
                                                                        behaviour: Callable[[socket.socket], None]
                                                                        ) -> None:
    runtime_of(served).mkdir(mode=0o700)
    stop = fake_server(hook_client.socket_path(served), behaviour)
    try:
        answer = call("rm -rf /", repo, served, tmp_path)
    finally:
        stop()
    assert not answer.served
    assert json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))


def test_without_xdg_runtime_dir_the_server_lives_in_a_private_temp_directory(
        repo: Path, merge_policy: Path, served: dict[str, str], tmp_path: Path) -> None:
    own = {k: v for k, v in served.items() if k != "XDG_RUNTIME_DIR"}
    own["TMPDIR"] = str(tmp_path / "tmp")
    Path(own["TMPDIR"]).mkdir()
    try:
        served_answer("rm -rf /", repo, own, tmp_path)
        directory = runtime_of(own)
        assert directory == tmp_path / "tmp" / f"gitvow-{os.getuid()}"
        assert oct(directory.stat().st_mode & 0o777) == oct(0o700)
        assert oct(Path(hook_client.socket_path(own)).stat().st_mode & 0o777) == oct(0o600)
    finally:
        subprocess.run([*hook_argv(), "--stop"], env=own, capture_output=True, timeout=30, check=False)


def test_stop_ends_the_server_and_says_so(repo: Path, merge_policy: Path, served: dict[str, str],
                                          tmp_path: Path) -> None:
    served_answer("ls", repo, served, tmp_path)
    stopped = subprocess.run([*hook_argv(), "--stop"], env=served, capture_output=True, text=True, timeout=30,
                             check=False)
    path = hook_client.socket_path(served)
    assert (stopped.returncode, stopped.stdout) == (0, f"gitvow-hook: stopped the gate server at {path}\n")
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(path)
    again = subprocess.run([*hook_argv(), "--stop"], env=served, capture_output=True, text=True, timeout=30,
                           check=False)
    assert (again.returncode, again.stdout) == (0, "gitvow-hook: no gate server is running\n")


def test_the_wire_format_round_trips_and_refuses_truncation() -> None:
    fields = [b"", b"a\nb", bytes(range(256))]
    assert hook_client.unframe(hook_client.frame(fields)) == fields
    whole = hook_client.frame(fields)
    for cut in (1, len(whole) // 2, len(whole) - 1):
        with pytest.raises(hook_client.Refused):
            hook_client.unframe(whole[:cut])

