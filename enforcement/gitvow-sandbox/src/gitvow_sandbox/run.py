"""``gitvow run``: one command in a sandbox whose only way out is the proxy.

The order matters: everything that can fail (tools, policy, layout, proxy, environment) is
settled before the sandbox starts, and nothing runs outside a sandbox: when bubblewrap cannot
set one up, the command is not run at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gitvow_sandbox import bwrap, environment, gitconfig, gitseal, hook, layout
from gitvow_sandbox.bridge import Bridge
from gitvow_sandbox.errors import SandboxError
from gitvow_sandbox.proxies import Proxy, find_or_start
from gitvow_sandbox.settings import SandboxSettings

#: Exit status when the sandbox could not be set up (the command's own status otherwise).
SETUP_FAILED = 125


@dataclass(frozen=True)
class RunOptions:
    """What ``gitvow run`` was asked to do."""

    agent: str
    policy: Path
    command: Sequence[str]
    proxy: str | None = None
    env_json: Path | None = None
    allow_write: Sequence[Path] = ()
    allow_read: Sequence[Path] = ()
    pass_env: Sequence[str] = ()
    home: Path | None = None
    hook: str | None = None
    cwd: Path = field(default_factory=Path.cwd)


def _settings(policy: Path) -> tuple[dict[str, object], SandboxSettings]:
    """The policy's raw data and its ``[sandbox]`` section, without validating the rest of
    the file (gitvow-proxy does when it computes the agent's environment): start-up time."""
    from gitvow.policy.load import _validate, read_document
    from gitvow_sandbox.settings import SandboxPolicy

    data = read_document(policy)
    section = {"sandbox": data["sandbox"]} if "sandbox" in data else {}
    return data, _validate(SandboxPolicy, section, str(policy)).sandbox


@contextlib.contextmanager
def _private_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gitvow-run-") as name:
        path = Path(name)
        path.chmod(0o700)
        yield path


def _agent_env(options: RunOptions, proxy: Proxy) -> dict[str, str]:
    if options.env_json is not None:
        return environment.from_json(options.env_json)
    return environment.from_proxy(options.policy, options.agent, proxy.host, proxy.port)


def _plan(options: RunOptions, data: dict[str, object], settings: SandboxSettings, run_dir: Path) -> layout.Layout:
    home = Path(os.environ.get("HOME") or Path.home())

    def paths(values: list[str], given: Sequence[Path] = ()) -> list[Path]:
        return [*(layout.expand(value, home) for value in values), *(path.expanduser().absolute() for path in given)]

    hidden = [*layout.proxy_files(data, options.policy.absolute(), home), *paths(settings.hide)]
    try:
        return layout.plan(cwd=options.cwd, home=home, run_dir=run_dir, hide=hidden, agent_home=options.home,
                           allow_write=paths(settings.allow_write, options.allow_write),
                           allow_read=paths(settings.allow_read, options.allow_read))
    except layout.LayoutError as exc:
        raise SandboxError(str(exc)) from None


def _spawn(argv: list[str], env: dict[str, str]) -> tuple[int, bool]:
    """Run bubblewrap with ``env`` as its whole environment: (exit status, whether the command
    started inside, as bubblewrap reported).

    bubblewrap is pid 1 inside and keeps the environment it was started with, readable there
    as ``/proc/1/environ``: started with the caller's, it would hand the agent every token of
    the operator's shell (``--clearenv`` clears only the child's)."""
    status_read, status_write = os.pipe()
    argv = [argv[0], "--json-status-fd", str(status_write), *argv[1:]]
    proc = subprocess.Popen(argv, pass_fds=(status_write,), env=env)
    os.close(status_write)
    try:
        code = proc.wait()
    except KeyboardInterrupt:  # the terminal's ^C reached bubblewrap too; wait for it to end
        code = proc.wait()
    except SystemExit:  # SIGTERM or SIGHUP to gitvow run: end the sandbox, then clean up (the caller's finally)
        proc.terminate()
        proc.wait()
        raise
    with os.fdopen(status_read, "rb") as status:
        started = any("child-pid" in json.loads(line) for line in status.read().splitlines() if line.strip())
    return code, started


#: What an agent-made submodule's ``.git`` is renamed to after the run (:func:`_hold_unsealed`).
HELD_SUFFIX = ".gitvow-untrusted"


def _hold_unsealed(plan: layout.Layout) -> None:
    """Submodules the agent made and put in the index: their repository is the agent's own, so
    it could not be sealed, and ``git status`` in the superproject would run git there, obeying
    whatever configuration the agent wrote (``core.fsmonitor``, filters, a ``commondir``
    elsewhere). Their ``.git`` is renamed aside after the run, so git outside finds no
    repository there and runs nothing of it; nothing is deleted, and one line says how to put
    it back once inspected. A checkout that is a link, or a ``.git`` that cannot be moved, is
    named as it was before: inspect it."""
    if plan.sealed is None:
        return
    for checkout in gitseal.unsealed_submodules(plan.sealed):
        dot_git = checkout / ".git"
        held = checkout / (".git" + HELD_SUFFIX)
        try:
            if checkout.is_symlink() or held.exists() or held.is_symlink():
                raise OSError("not moved")
            dot_git.rename(held)
        except OSError:
            print(f"gitvow run: warning: {checkout} is a repository made in the sandbox that the index names as a "
                  f"submodule: git status in its superproject runs git there, obeying its configuration "
                  f"({dot_git}); inspect it, or drop it (git rm --cached {checkout.name})", file=sys.stderr)
            continue
        print(f"gitvow run: {checkout} is a repository made in the sandbox that the index names as a submodule: "
              f"git outside would obey its configuration, so its .git is held aside as {held.name}; inspect it, "
              f"then mv {held} {dot_git}", file=sys.stderr)


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run(options: RunOptions) -> int:
    """Run the command sandboxed; its exit status, or SandboxError before anything ran.

    SIGTERM and SIGHUP end the run as an exception would, so the proxy started for it is
    stopped and its directories removed (Python's default would leave the proxy running)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    bwrap_path, _socat = bwrap.tools()
    data, settings = _settings(options.policy)
    environment.refuse_model_keys([*settings.pass_env, *options.pass_env])
    with _private_dir() as private, _private_dir() as run_dir:
        if options.hook is not None:
            if options.home is None:  # the hook's configuration needs a home to go in
                (private / "home").mkdir()
                options = replace(options, home=private / "home")
            options = replace(options, allow_read=[*options.allow_read, *hook.reachable(Path(os.environ.get("HOME") or Path.home()))])
        plan = _plan(options, data, settings, run_dir)
        extra = {} if options.hook is None or plan.agent_home is None else hook.install(
            options.hook, data, home=plan.agent_home, tree=plan.writable[0], run_dir=run_dir)
        proxy = find_or_start(options.policy, options.proxy, private)
        bridge: Bridge | None = None
        try:
            agent_env = environment.for_sandbox(_agent_env(options, proxy), run_dir) | extra
            env = environment.compose(agent_env, plan.home, [*settings.pass_env, *options.pass_env])
            bridge = Bridge(run_dir / bwrap.SOCKET.name, (proxy.host, proxy.port)).start()
            git_file = gitconfig.write(run_dir, Path(os.environ.get("HOME") or Path.home()),
                                       settings.model_dump(include=set(gitconfig.KEYS.values())), env)
            mounts = [*layout.mount_arguments(plan), "--ro-bind", str(git_file), str(plan.home / ".gitconfig")]
            argv = bwrap.command_line(bwrap_path, mounts, str(options.cwd.resolve()), options.command)
            code, started = _spawn(argv, env)
            if not started:
                raise SandboxError(bwrap.diagnose(bwrap_path))
            _hold_unsealed(plan)
            return code
        finally:
            if bridge is not None:
                bridge.stop()
            proxy.stop()
