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
import select
import stat
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

from .conftest import hook_argv, installed_hook

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
    """The test environment with the gate server on, its FIFO under this test's own runtime directory."""
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
    """Until a process reads the request FIFO (opening it to write without blocking succeeds)."""
    path = hook_client.fifo_path(env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
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
        assert not {"json", "subprocess", "socket", "re", "enum"} & answer.imported, answer.imported


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
    return Path(hook_client.fifo_path(env)).parent


def test_a_stale_fifo_is_decided_in_process_and_replaced(repo: Path, merge_policy: Path, served: dict[str, str],
                                                         tmp_path: Path) -> None:
    path = hook_client.fifo_path(served)
    runtime_of(served).mkdir(mode=0o700)
    os.mkfifo(path, 0o600)  # the file stays; nobody reads it
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    wait_for_server(served)
    assert call("rm -rf /", repo, served, tmp_path).served


@pytest.mark.parametrize("what", ["fifo", "directory"])
@pytest.mark.parametrize("mode", [0o666, 0o660, 0o620])
def test_a_fifo_or_directory_others_may_use_is_refused(repo: Path, merge_policy: Path, served: dict[str, str],
                                                       tmp_path: Path, what: str, mode: int) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    path = hook_client.fifo_path(served)
    target = path if what == "fifo" else os.path.dirname(path)
    os.chmod(target, mode | (0o100 if what == "directory" else 0))
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    os.chmod(target, 0o700 if what == "directory" else 0o600)
    assert call("rm -rf /", repo, served, tmp_path).served


def test_a_link_in_place_of_the_fifo_or_directory_is_refused(repo: Path, merge_policy: Path, served: dict[str, str],
                                                              tmp_path: Path) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    path = Path(hook_client.fifo_path(served))
    path.rename(path.with_name("real.fifo"))
    path.symlink_to(path.with_name("real.fifo"))  # the server still reads the FIFO it points to
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    path.unlink()
    path.with_name("real.fifo").rename(path)  # put back: the server answers again, and --stop reaches it
    assert call("rm -rf /", repo, served, tmp_path).served


@as_root
@pytest.mark.parametrize("what", ["fifo", "directory"])
def test_a_fifo_or_directory_of_another_user_is_refused(repo: Path, merge_policy: Path, served: dict[str, str],
                                                        tmp_path: Path, what: str) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    path = hook_client.fifo_path(served)
    target = path if what == "fifo" else os.path.dirname(path)
    os.chown(target, NOBODY, NOBODY)
    answer = call("rm -rf /", repo, served, tmp_path)
    assert not answer.served
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))
    os.chown(target, os.getuid(), os.getgid())
    assert call("rm -rf /", repo, served, tmp_path).served


def submit(env: dict[str, str], repo: Path, name: str, *, request_mode: int = 0o600, reply_mode: int = 0o600,
           owner: int | None = None) -> bytes | None:
    """Put a call in the running server's directory by hand, as a client would, with the given
    modes and owner of its request file and reply FIFO; the server's answer, or None within 3 s."""
    path = hook_client.fifo_path(env)
    base = os.path.join(os.path.dirname(path), name)
    request = hook_client.frame([hook_client.PROTOCOL, b"decide", hook_client.plugin_key(env), b"claude",
                                 b"PreToolUse", os.fsencode(repo), hook_client.environment_text(env),
                                 claude("rm -rf /", repo).encode()])
    Path(base + ".req").write_bytes(request)
    os.chmod(base + ".req", request_mode)
    os.mkfifo(base + ".reply", 0o600)
    os.chmod(base + ".reply", reply_mode)
    if owner is not None:
        os.chown(base + ".req", owner, owner)
    reply = os.open(base + ".reply", os.O_RDONLY | os.O_NONBLOCK)
    try:
        server = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.write(server, name.encode() + b"\n")
        os.close(server)
        return hook_client.read_until_closed(reply, time.monotonic() + 3)
    except hook_client.Refused:
        return None
    finally:
        os.close(reply)
        os.unlink(base + ".req")
        os.unlink(base + ".reply")


def test_the_server_answers_no_request_others_may_have_written(repo: Path, merge_policy: Path,
                                                               served: dict[str, str], tmp_path: Path) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    answered = submit(served, repo, "c-1-1")
    assert answered is not None and hook_client.unframe(answered)[0] == b"ok"  # the control: a sound call
    assert submit(served, repo, "c-1-2", request_mode=0o644) is None
    assert submit(served, repo, "c-1-3", reply_mode=0o622) is None
    assert submit(served, repo, "../c-1-4") is None
    assert call("rm -rf /", repo, served, tmp_path).served  # and it serves on


@as_root
def test_the_server_answers_no_request_of_another_user(repo: Path, merge_policy: Path, served: dict[str, str],
                                                       tmp_path: Path) -> None:
    served_answer("rm -rf /", repo, served, tmp_path)
    assert submit(served, repo, "c-2-1", owner=NOBODY) is None
    assert call("rm -rf /", repo, served, tmp_path).served


def fake_server(path: str, answer: Callable[[], bytes | None]) -> Callable[[], None]:
    """A server of this user reading the request FIFO at ``path`` that answers each call with
    ``answer()`` (None: nothing, for longer than the client waits); returns its stop."""
    os.mkfifo(path, 0o600)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    stopping = threading.Event()

    def loop() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not stopping.is_set():
            if not poller.poll(200):
                continue
            for line in os.read(fd, 65536).split(b"\n"):
                if not line:
                    continue
                data = answer()
                if data is None:
                    time.sleep(hook_client.TIMEOUT + 1.5)  # longer than the client waits
                    continue
                try:
                    out = os.open(os.path.join(os.path.dirname(path), line.decode()) + ".reply", os.O_WRONLY)
                except OSError:
                    continue
                os.write(out, data)
                os.close(out)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        thread.join()
        os.close(keep)
        os.close(fd)
        os.unlink(path)

    return stop


def garbage() -> bytes | None:
    return b"2\n2\nok\n999\nnot a frame"


def silence() -> bytes | None:
    return None


def another_protocol() -> bytes | None:
    return json.dumps({"decision": "allow"}).encode()


def stale_answer() -> bytes | None:
    return hook_client.frame([b"stale"])  # a server of another plugin set: never an answer


@pytest.mark.parametrize("behaviour", [garbage, silence, another_protocol, stale_answer],
                         ids=lambda f: f.__name__)
def test_a_server_that_answers_garbage_or_nothing_is_decided_in_process(repo: Path, merge_policy: Path,
                                                                        served: dict[str, str], tmp_path: Path,
                                                                        behaviour: Callable[[], bytes | None]
                                                                        ) -> None:
    runtime_of(served).mkdir(mode=0o700)
    stop = fake_server(hook_client.fifo_path(served), behaviour)
    try:
        answer = call("rm -rf /", repo, served, tmp_path)
    finally:
        stop()
    assert not answer.served
    assert json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert same(answer, in_process("rm -rf /", repo, served, tmp_path))


def test_concurrent_calls_each_get_their_own_answer(repo: Path, merge_policy: Path, served: dict[str, str],
                                                    tmp_path: Path) -> None:
    served_answer("ls", repo, served, tmp_path)
    commands = ["rm -rf /", "ls -la"] * 4
    answers: dict[int, Answer] = {}

    def one(i: int) -> None:
        answers[i] = call(commands[i], repo, served, tmp_path)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(commands))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, command in enumerate(commands):
        assert answers[i].served
        denied = '"permissionDecision": "deny"' in answers[i].stdout
        assert denied == (command == "rm -rf /"), (command, answers[i])
    assert sorted(os.listdir(runtime_of(served))) == sorted(
        os.path.basename(hook_client.fifo_path(served)).removesuffix(".fifo") + end for end in (".fifo", ".lock"))


def test_the_installed_command_line_is_served_and_decides_alike(repo: Path, merge_policy: Path,
                                                               served: dict[str, str], tmp_path: Path) -> None:
    """``python -I -S -c …``, as ``gitvow install`` writes it: answered by the server, and in-process
    (no server) after adding the site directories, the same bytes as ``gitvow-hook``."""
    command = f"{installed_hook()} --agent claude PreToolUse"

    def run(env: dict[str, str]) -> tuple[int, str, str]:
        done = subprocess.run(["sh", "-c", command], input=claude("rm -rf /", repo), capture_output=True, text=True,
                              cwd=repo, env=env, timeout=60, check=False)
        return done.returncode, done.stdout, done.stderr

    expected = in_process("rm -rf /", repo, served, tmp_path)
    alone = run({**served, "GITVOW_GATE_SERVER": "off"})
    assert alone == (expected.code, expected.stdout, expected.stderr)
    run(served)  # starts the server
    wait_for_server(served)
    before = os.stat(hook_client.fifo_path(served)).st_ino
    assert run(served) == alone
    assert os.stat(hook_client.fifo_path(served)).st_ino == before  # the same server: no stale key
    assert call("rm -rf /", repo, served, tmp_path).served  # and gitvow-hook shares it


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
        fifo = Path(hook_client.fifo_path(own)).lstat()
        assert stat.S_ISFIFO(fifo.st_mode) and oct(fifo.st_mode & 0o777) == oct(0o600)
    finally:
        subprocess.run([*hook_argv(), "--stop"], env=own, capture_output=True, timeout=30, check=False)


def test_stop_ends_the_server_and_says_so(repo: Path, merge_policy: Path, served: dict[str, str],
                                          tmp_path: Path) -> None:
    served_answer("ls", repo, served, tmp_path)
    stopped = subprocess.run([*hook_argv(), "--stop"], env=served, capture_output=True, text=True, timeout=30,
                             check=False)
    path = hook_client.fifo_path(served)
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

