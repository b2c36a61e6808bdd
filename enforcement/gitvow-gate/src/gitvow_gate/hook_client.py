"""``gitvow-hook``: the process an agent starts for each tool call, a small client of the gate server.

The engine (the policy, the plugins, the adapters) stays loaded in a per-user gate server
(:mod:`gitvow_gate.gate_server`), so the process the agent starts only forwards the call. It
imports the standard library alone, and of it only what a bare interpreter has not already
paid for: ``os``, ``sys``, ``time``, ``select``, and ``site`` for its ``getsitepackages`` (under
``-S`` importing it runs nothing). No ``socket``, which imports ``enum`` and ``selectors``; no
``json`` or ``re``. ``gitvow install`` runs it as ``python -I -S -c …``
(:func:`command_line`), so neither ``site`` nor the console-script template runs either;
``gitvow-hook`` runs the same code for other callers.

The transport is named pipes in a private directory (``$XDG_RUNTIME_DIR/gitvow``, else
``$TMPDIR/gitvow-UID``): this user's, mode 0700, not a link. The server reads the request
FIFO ``gate-HASH.fifo``; a call writes its request to a file of its own in the directory
(``c-PID-NS.req``, created exclusively, 0600), makes a reply FIFO of its own (``c-PID-NS.reply``,
0600, so concurrent calls never read each other's answers), writes one short line naming
them to the request FIFO (under ``PIPE_BUF``: atomic), and waits on its reply FIFO with
``select.poll`` until :data:`TIMEOUT` seconds in total have passed. Both files are removed
after the call. The request FIFO must be a FIFO, this user's, and open to nobody else; a
FIFO has no peer credentials, so the directory is the trust boundary, and the server checks
every file a call names the same way.

Anything short of a well-formed answer from a server that passed every check is decided
here, in-process, by the very code the server runs (:func:`gitvow_gate.invocation.answer`):
no server (no FIFO, or one with no reader: it is started, detached, for the next call), a
FIFO or directory another user owns or others may use, no answer within :data:`TIMEOUT`
seconds, or an answer that does not parse. So the client never fails open: the worst the
server can cost is the in-process decision, whose own failures are the gate's fail-closed deny.

Wire format (both ways, :func:`frame` / :func:`unframe`): a count line, then each field as its
length in bytes on a line followed by the bytes. A request is ``[PROTOCOL, "decide", plugin
key, agent, event, cwd, environment, payload]``; the answer is ``["ok", exit code, stdout,
stderr]``, or ``["stale"]`` from a server built from another plugin set, which then stops.
"""


import os
import sys
import time

#: Bumped whenever the wire format changes: a server of another version answers nothing.
PROTOCOL = b"gitvow-gate/2"
#: The most seconds the client spends on the server, request to answer; then it decides itself.
TIMEOUT = 1.0
#: ``GITVOW_GATE_SERVER=off`` (or ``0``, ``no``) decides every call in-process, starting no server.
SWITCH = "GITVOW_GATE_SERVER"
AGENT_NAMES = ("claude", "codex", "cursor", "gemini", "copilot")
_LARGEST = 64 * 1024 * 1024
# the file types and permission bits of stat(2), as the ``stat`` module names them (S_IFMT…)
_IFMT, _IFDIR, _IFIFO, _IFREG = 0o170000, 0o040000, 0o010000, 0o100000
_KINDS = {"dir": _IFDIR, "fifo": _IFIFO, "file": _IFREG}


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


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_file(path: str) -> bytes:
    """A private regular file's bytes (never through a link), at most :data:`_LARGEST`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        check_fd(fd, path, kind="file")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > _LARGEST:
                raise Refused("a message larger than any hook payload")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_until_closed(fd: int, deadline: float) -> bytes:
    """Read a non-blocking FIFO until its writer closes it (one message per reply FIFO), polling
    with :mod:`select` (a module of a few C functions) so the answer is read the moment it comes."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Refused(f"no answer within {TIMEOUT} s")
        if not poller.poll(max(int(left * 1000), 1)):
            continue
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            continue
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > _LARGEST:
            raise Refused("a message larger than any hook payload")


def environment_text(env: dict[str, str]) -> bytes:
    return b"\0".join(os.fsencode(f"{k}={v}") for k, v in env.items())


def fnv(data: bytes) -> int:
    """FNV-1a, 32 bits: a stable short name without importing ``zlib`` (``hash`` is salted)."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


# -- where the server lives, and whether it is ours ----------------------------------------------


def runtime_dir(env: dict[str, str]) -> str:
    """``$XDG_RUNTIME_DIR/gitvow``, else ``$TMPDIR/gitvow-UID`` (``/tmp``): private to the user."""
    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return os.path.join(base, "gitvow")
    return os.path.join(env.get("TMPDIR") or "/tmp", f"gitvow-{os.getuid()}")


def prefix() -> str:
    """The installation's prefix: ``sys.prefix``, which in a virtualenv ``site`` sets at start-up;
    without ``site`` (``-S``), found as ``site`` finds it, by the ``pyvenv.cfg`` beside or above
    the interpreter."""
    if not sys.flags.no_site:
        return sys.prefix
    here = os.path.dirname(sys.executable)
    for directory in (here, os.path.dirname(here)):
        if os.path.isfile(os.path.join(directory, "pyvenv.cfg")):
            return directory
    return sys.prefix


def fifo_path(env: dict[str, str]) -> str:
    """The server's request FIFO. One server per user and per installation: the environment's
    prefix (a virtualenv) and the Python's version, however the interpreter is named."""
    installation = os.fsencode(f"{prefix()}\0{sys.version}")
    return os.path.join(runtime_dir(env), f"gate-{fnv(installation):08x}.fifo")


def check_mode(path: str, mode: int, uid: int, *, kind: str) -> None:
    if mode & _IFMT != _KINDS[kind]:
        raise Refused(f"{path} is not a {kind}")
    if uid != os.getuid():
        raise Refused(f"{path} belongs to uid {uid}")
    if mode & 0o077:
        raise Refused(f"{path} is open to others (mode {mode & 0o7777:o})")


def check_private(path: str, *, kind: str) -> None:
    """``path`` is a ``kind`` (``dir``, ``fifo`` or ``file``, never a link), owned by this user, and
    only they may use it (no group or other permission); else :class:`Refused`, naming what is wrong."""
    info = os.lstat(path)  # FileNotFoundError: no server (yet)
    check_mode(path, info.st_mode, info.st_uid, kind=kind)


def check_fd(fd: int, path: str, *, kind: str) -> None:
    """:func:`check_private` for the file actually opened (no race with a rename in between)."""
    info = os.fstat(fd)
    check_mode(path, info.st_mode, info.st_uid, kind=kind)


def make_private_dir(path: str) -> None:
    """Create the runtime directory 0700 if missing; then it must pass :func:`check_private`."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    check_private(path, kind="dir")


def site_directories() -> list[str]:
    """The installation's site-packages directories, as :mod:`site` computes them for the prefix
    (its public ``getsitepackages``, which follows a distribution's own layout), and the user's
    when this interpreter honours it. Importing ``site`` under ``-S`` runs none of it."""
    import site

    home = prefix()
    found = site.getsitepackages([home])
    if not sys.flags.no_user_site and home == sys.base_prefix:
        found.append(site.getusersitepackages())
    return found


def plugin_key(env: dict[str, str]) -> bytes:
    """What the installed plugin set depends on: the Python, ``GITVOW_DISABLE_PLUGINS``,
    ``PYTHONPATH`` when honoured, and each site-packages directory with its modification time
    (installing or removing a distribution changes it). The client (under ``python -I -S``, with
    no ``site``) and the server compute it alike; a server built under another key never answers."""
    parts = [sys.version, env.get("GITVOW_DISABLE_PLUGINS", ""),
             "" if sys.flags.ignore_environment else env.get("PYTHONPATH", "")]
    for entry in site_directories():
        try:
            parts.append(f"{entry}\0{os.stat(entry).st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}\0-")
    return "\n".join(parts).encode()


# -- the client ------------------------------------------------------------------------------


def exchange(path: str, request: bytes) -> list[bytes]:
    """The fields the server answers ``request`` with; :class:`Refused` (or an OSError) when it cannot be trusted.

    ``FileNotFoundError`` (no FIFO) and ``OSError(ENXIO)`` (a FIFO no server reads) mean no server.
    """
    deadline = time.monotonic() + TIMEOUT
    directory = os.path.dirname(path)
    check_private(directory, kind="dir")
    check_private(path, kind="fifo")
    name = f"c-{os.getpid()}-{time.monotonic_ns()}"
    base = os.path.join(directory, name)
    reply = -1
    try:
        fd = os.open(base + ".req", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            write_all(fd, request)
        finally:
            os.close(fd)
        os.mkfifo(base + ".reply", 0o600)
        os.chmod(base + ".reply", 0o600)  # whatever the umask: the server must be able to write it
        reply = os.open(base + ".reply", os.O_RDONLY | os.O_NONBLOCK)
        server = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # ENXIO: nobody reads it
        try:
            check_fd(server, path, kind="fifo")
            os.write(server, name.encode() + b"\n")  # < PIPE_BUF: one atomic write
        finally:
            os.close(server)
        return unframe(read_until_closed(reply, deadline))
    finally:
        if reply >= 0:
            os.close(reply)
        for leftover in (base + ".req", base + ".reply"):
            try:  # noqa: SIM105 (contextlib would be one more import on every call)
                os.unlink(leftover)
            except OSError:
                pass


def ask_server(path: str, request: bytes) -> tuple[int, bytes, bytes]:
    """The server's decision of ``request``: exit status, stdout, stderr."""
    answer = exchange(path, request)
    if len(answer) != 4 or answer[0] != b"ok":
        raise Refused(f"the server answered {answer[0][:40]!r}")
    code = int(answer[1])
    if not 0 <= code <= 255:
        raise Refused("an exit status out of range")
    return code, answer[2], answer[3]


def server_argv(path: str) -> list[str]:
    """``gitvow-gate-server FIFO``, the console script beside this one (or beside the Python).

    An installed script rather than ``python -m``: its ``sys.path`` is laid out as the hook's
    own (the scripts directory first, never the agent's working directory), so the server and
    an in-process call key the plugin index alike (:mod:`gitvow_gate.plugin_index`). A client
    run isolated (``-I``) starts it ignoring the environment and the user's site (``-E -s``),
    as the client itself does, so both compute the same :func:`plugin_key`.
    """
    flags = (["-E"] if sys.flags.ignore_environment else []) + (["-s"] if sys.flags.no_user_site else [])
    ran = sys.argv[0] if sys.argv else ""
    where = os.path.dirname(os.path.abspath(ran)) if os.path.basename(ran).startswith("gitvow") else ""
    for directory in (where, os.path.dirname(sys.executable)):
        script = os.path.join(directory, "gitvow-gate-server")
        if directory and os.path.isfile(script):
            return [sys.executable, *flags, script, path]
    return [sys.executable, *flags, "-P", "-m", "gitvow_gate.gate_server", path]


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


def no_server(exc: OSError) -> bool:
    """No FIFO, or a FIFO no process reads (``ENXIO`` opening it to write without blocking)."""
    return isinstance(exc, FileNotFoundError) or exc.errno == 6  # errno.ENXIO on every POSIX system


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
        path = fifo_path(env)
        try:
            request = frame([PROTOCOL, b"decide", plugin_key(env), agent.encode(), event.encode(),
                             os.fsencode(os.getcwd()), environment_text(env), stdin])
            code, out, err = ask_server(path, request)
        except OSError as exc:
            if no_server(exc):
                start_server(path, env)
        except Exception:  # anything else short of a trusted answer: decided here, never an allow by default
            pass
        else:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            sys.stderr.buffer.write(err)
            return code
    return in_process(agent, event, stdin, env)


def add_site() -> None:
    """Under ``python -I -S -c`` (:func:`command_line`) the installation's site directories are not
    on ``sys.path``: add them as ``site`` does at start-up, and put the scripts directory first
    where a console script has its own, so the in-process decision imports, and keys the plugin
    index (:mod:`gitvow_gate.plugin_index`), exactly as ``gitvow-hook`` and the server do."""
    if not sys.flags.no_site:
        return
    import site

    sys.path[0] = os.path.dirname(sys.executable)  # in place of the directory command_line put there
    site.main()


def in_process(agent: str, event: str, stdin: bytes, env: dict[str, str]) -> int:
    """The decision made here, exactly as the server makes it (:func:`gitvow_gate.invocation.answer`)."""
    add_site()
    from gitvow_gate.invocation import answer  # the engine: imported only when this process must decide

    code, out, err = answer(agent, event, stdin, env)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    return code


def command_line(python: str, directory: str) -> str:
    """The shell command ``gitvow install`` writes: this client run by ``python -I -S`` (no
    ``site``, no console-script template, no environment variables), with ``directory`` (where
    ``gitvow_gate`` is installed) first on ``sys.path``; the hook's arguments follow it."""
    import shlex

    code = (f"import sys;sys.path.insert(0,{directory!r});"
            "from gitvow_gate.hook_client import main;sys.exit(main())")
    return f"{shlex.quote(python)} -I -S -c {shlex.quote(code)}"


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
    path = fifo_path(env)
    try:
        if exchange(path, frame([PROTOCOL, b"stop"])) != [b"stopped"]:
            raise Refused("the server did not say it stopped")
    except Refused as exc:
        print(f"gitvow-hook: cannot stop the gate server at {path}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if no_server(exc):
            print("gitvow-hook: no gate server is running")
            return 0
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
