"""``gitvow-hook``: the process an agent starts for each tool call, a small client of the gate server.

The engine (the policy, the plugins, the adapters) stays loaded in a per-user gate server
(:mod:`gitvow_gate.gate_server`), so the process the agent starts only forwards the call: it
imports the standard library alone (``os``, ``sys``, ``socket``, ``stat``, ``time``, ``zlib``) and no
gitvow module beyond this one, sends the agent's payload with the cwd and environment, and
prints the answer the server decided.

Anything short of a well-formed answer from a server that passed every check is decided
here, in-process, by the very code the server runs (:func:`gitvow_gate.invocation.run`):
no server yet (it is started, detached, for the next call), a stale socket, a socket or
directory another user owns or others may write, a peer of another uid, no answer within
:data:`TIMEOUT` seconds in total, or an answer that does not parse. So the client never fails
open: the worst the server can cost is the in-process decision, whose own failures are the
gate's fail-closed deny.

Wire format (both ways, :func:`frame` / :func:`unframe`): a count line, then each field as its
length in bytes on a line followed by the bytes. A request is ``[PROTOCOL, "decide", plugin
key, agent, event, cwd, environment, payload]``; the answer is ``["ok", exit code, stdout,
stderr]``, or ``["stale"]`` from a server built from another plugin set, which then stops.
The client parses no JSON (the payload is forwarded as bytes): ``json`` would import ``re``
and ``enum``, which cost this process more than the whole answer.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import time
import zlib

#: Bumped whenever the wire format changes: a server of another version answers nothing.
PROTOCOL = b"gitvow-gate/1"
#: The most seconds the client spends on the server, connect to answer; then it decides itself.
TIMEOUT = 1.0
#: ``GITVOW_GATE_SERVER=off`` (or ``0``, ``no``) decides every call in-process, starting no server.
SWITCH = "GITVOW_GATE_SERVER"
AGENT_NAMES = ("claude", "codex", "cursor", "gemini", "copilot")
_LARGEST = 64 * 1024 * 1024


class Refused(Exception):
    """The server may not, or did not, answer this call: the client decides in-process."""


# -- the wire ------------------------------------------------------------------------------


def frame(fields: list[bytes]) -> bytes:
    return b"".join([b"%d\n" % len(fields), *(b"%d\n%s" % (len(f), f) for f in fields)])


def unframe(data: bytes) -> list[bytes]:
    """The fields of one message; raises :class:`Refused` for anything malformed or truncated."""
    try:
        count_text, _, rest = data.partition(b"\n")
        count = int(count_text)
        fields: list[bytes] = []
        at = 0
        for _ in range(count):
            end = rest.index(b"\n", at)
            size = int(rest[at:end])
            if size < 0 or end + 1 + size > len(rest):
                raise Refused("a truncated message")
            fields.append(rest[end + 1:end + 1 + size])
            at = end + 1 + size
    except ValueError:
        raise Refused("a malformed message") from None
    if at != len(rest) or not 0 < count < 64:
        raise Refused("a malformed message")
    return fields


def receive(sock: socket.socket, deadline: float | None) -> bytes:
    """Read until the peer shuts its side down (one message per connection)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline is not None:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > _LARGEST:
            raise Refused("a message larger than any hook payload")


def environment_text(env: dict[str, str]) -> bytes:
    return b"\0".join(os.fsencode(f"{k}={v}") for k, v in env.items())


# -- where the server lives, and whether it is ours ----------------------------------------------


def runtime_dir(env: dict[str, str]) -> str:
    """``$XDG_RUNTIME_DIR/gitvow``, else ``$TMPDIR/gitvow-UID`` (``/tmp``): private to the user."""
    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return os.path.join(base, "gitvow")
    return os.path.join(env.get("TMPDIR") or "/tmp", f"gitvow-{os.getuid()}")


def socket_path(env: dict[str, str]) -> str:
    """One server per user and per installation: the environment's prefix (a virtualenv) and the
    Python's version, however the interpreter is named (``python``, ``python3.12``)."""
    installation = os.fsencode(f"{sys.prefix}\0{sys.version}")
    return os.path.join(runtime_dir(env), f"gate-{zlib.crc32(installation):08x}.sock")


def check_private(path: str, *, kind: str) -> None:
    """``path`` is a ``kind`` (``dir`` or ``socket``, never a link), owned by this user, and only they
    may use it (no group or other permission); else :class:`Refused`, naming what is wrong."""
    info = os.lstat(path)  # FileNotFoundError: no server (yet)
    is_kind = stat.S_ISDIR(info.st_mode) if kind == "dir" else stat.S_ISSOCK(info.st_mode)
    if not is_kind:
        raise Refused(f"{path} is not a {kind}")
    if info.st_uid != os.getuid():
        raise Refused(f"{path} belongs to uid {info.st_uid}")
    if info.st_mode & 0o077:
        raise Refused(f"{path} is open to others (mode {stat.S_IMODE(info.st_mode):o})")


def make_private_dir(path: str) -> None:
    """Create the runtime directory 0700 if missing; then it must pass :func:`check_private`."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    check_private(path, kind="dir")


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end (``SO_PEERCRED``: pid, uid, gid as C ints)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        raise Refused("this system does not tell a socket's peer (SO_PEERCRED)")
    raw = sock.getsockopt(socket.SOL_SOCKET, option, 12)
    return int.from_bytes(raw[4:8], sys.byteorder)


def plugin_key(paths: list[str], env: dict[str, str]) -> bytes:
    """What the installed plugin set depends on: the Python, ``GITVOW_DISABLE_PLUGINS``, and each
    import-path directory with its modification time (installing or removing a distribution
    changes its directory's). A server built under another key never answers."""
    parts = [sys.version, env.get("GITVOW_DISABLE_PLUGINS", "")]
    for entry in paths:
        try:
            parts.append(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}\0-")
    return "\n".join(parts).encode()


# -- the client ------------------------------------------------------------------------------


def ask_server(path: str, request: bytes) -> tuple[int, bytes, bytes]:
    """The server's answer to ``request``; :class:`Refused` (or an OSError) when it cannot be trusted."""
    deadline = time.monotonic() + TIMEOUT
    check_private(os.path.dirname(path), kind="dir")
    check_private(path, kind="socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            raise Refused("the server runs as another user")
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = unframe(receive(sock, deadline))
    if len(answer) != 4 or answer[0] != b"ok":
        raise Refused(f"the server answered {answer[0][:40]!r}")
    code = int(answer[1])
    if not 0 <= code <= 255:
        raise Refused("an exit status out of range")
    return code, answer[2], answer[3]


def server_argv(path: str) -> list[str]:
    """``gitvow-gate-server SOCKET``, the console script beside this one (or beside the Python).

    An installed script rather than ``python -m``: its ``sys.path`` is laid out as the hook's
    own (the scripts directory first, never the agent's working directory), so the server and
    an in-process call key the plugin index alike (:mod:`gitvow_gate.plugin_index`).
    """
    ran = sys.argv[0] if sys.argv else ""
    where = os.path.dirname(os.path.abspath(ran)) if os.path.basename(ran).startswith("gitvow") else ""
    for directory in (where, os.path.dirname(sys.executable)):
        script = os.path.join(directory, "gitvow-gate-server")
        if directory and os.path.isfile(script):
            return [sys.executable, script, path]
    return [sys.executable, "-P", "-m", "gitvow_gate.gate_server", path]


def start_server(path: str, env: dict[str, str]) -> None:
    """Start the server for the next call, detached (its own session, no terminal), never waited for."""
    try:
        make_private_dir(os.path.dirname(path))
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(sys.executable, server_argv(path), env,
                           file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                                         (os.POSIX_SPAWN_DUP2, devnull, 2)],
                           setsid=True)
        finally:
            os.close(devnull)
    except (OSError, Refused):
        pass  # no server: every call is decided in-process, as before there was one


def serve(agent: str | None, event: str) -> int:
    """Answer one hook call: through the server when it is up and sound, else in-process."""
    env = dict(os.environ)
    named = env.get("GITVOW_AGENT", "")
    # --agent names the hook protocol; $GITVOW_AGENT is the policy's name for the agent
    # (gitvow_gate.invocation.policy_agent) and stands in for --agent only when it names a protocol
    agent = agent or (named if named in AGENT_NAMES else "claude")
    try:
        stdin = sys.stdin.buffer.read()
    except (OSError, ValueError):
        stdin = b""
    if env.get(SWITCH, "").lower() not in ("off", "0", "no", "false"):
        path = socket_path(env)
        try:
            # sys.path[0] is the script's directory: nothing is installed there
            request = frame([PROTOCOL, b"decide", plugin_key(sys.path[1:], env), agent.encode(), event.encode(),
                             os.fsencode(os.getcwd()), environment_text(env), stdin])
            code, out, err = ask_server(path, request)
        except FileNotFoundError:
            start_server(path, env)
        except ConnectionRefusedError:  # a socket file no server listens on
            start_server(path, env)
        except Exception:  # anything else short of a trusted answer: decided here, never an allow by default
            pass
        else:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            sys.stderr.buffer.write(err)
            return code
    return in_process(agent, event, stdin, env)


def in_process(agent: str, event: str, stdin: bytes, env: dict[str, str]) -> int:
    """The decision made here, exactly as the server makes it (:func:`gitvow_gate.invocation.answer`)."""
    from gitvow_gate.invocation import answer  # the engine: imported only when this process must decide

    code, out, err = answer(agent, event, stdin, env)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    return code


def parse(argv: list[str]) -> tuple[str | None, str] | None:
    """``[--agent NAME] EVENT`` (as ``gitvow hook`` takes them), or None."""
    agent: str | None = None
    rest = list(argv)
    if rest and rest[0].startswith("--agent="):
        agent = rest.pop(0).partition("=")[2]
    elif len(rest) >= 2 and rest[0] == "--agent":
        agent = rest[1]
        rest = rest[2:]
    if len(rest) != 1 or rest[0].startswith("-") or agent == "":
        return None
    return agent, rest[0]


def stop(env: dict[str, str]) -> int:
    """``gitvow-hook --stop``: ask this installation's server to exit (0 also when none runs)."""
    path = socket_path(env)
    try:
        check_private(os.path.dirname(path), kind="dir")
        check_private(path, kind="socket")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT)
            sock.connect(path)
            if peer_uid(sock) != os.getuid():
                raise Refused("the server runs as another user")
            sock.sendall(frame([PROTOCOL, b"stop"]))
            sock.shutdown(socket.SHUT_WR)
            receive(sock, time.monotonic() + TIMEOUT)
    except (FileNotFoundError, ConnectionRefusedError):
        print("gitvow-hook: no gate server is running")
        return 0
    except (OSError, Refused) as exc:
        print(f"gitvow-hook: cannot stop the gate server at {path}: {exc}", file=sys.stderr)
        return 1
    print(f"gitvow-hook: stopped the gate server at {path}")
    return 0


USAGE = "usage: gitvow-hook [--agent NAME] EVENT   (the agent's JSON on stdin)\n       gitvow-hook --stop"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--stop"]:
        return stop(dict(os.environ))
    parsed = parse(args)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    return serve(*parsed)


if __name__ == "__main__":
    sys.exit(main())
