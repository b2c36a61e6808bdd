"""What the sandbox's file system holds: which paths are writable, which are hidden.

Everything is read-only (``/`` bound read-only), then given back writable where the agent
works (the working tree, ``--allow-write``, a private ``/tmp`` and home), and hidden where a
credential or the proxy's own files live. Hiding comes last, so it wins over a writable
bind that contains a hidden path (a home used as a working tree, a policy file inside the
repository). Paths are hidden at their resolved location too: a symlinked ``~/.ssh`` would
otherwise stay readable at its target.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvow_sandbox import gitseal

#: The operator's credentials under a home directory: SSH, git, forge CLIs, cloud CLIs,
#: registries, password stores, gitvow's own state. The sandbox's home is a fresh one, so
#: these matter where a home (or part of it) is bound in: a working tree at ``~``, an
#: ``--allow-write ~/...`` or ``--home``.
HOME_CREDENTIALS = (
    ".ssh", ".git-credentials", ".gitconfig", ".config/git/credentials", ".netrc", ".gnupg", ".password-store",
    ".config/gh", ".config/glab-cli", ".config/hub", ".config/tea", ".config/linear",
    ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".config/doctl", ".oci", ".config/hcloud", ".terraform.d",
    ".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".config/op", ".vault-token",
    ".gitvow", ".config/gitvow", ".local/share/gitvow", ".local/state/gitvow",
)

#: Keys of the policy file that name the proxy's files (besides every ``*_file``), with the
#: proxy's defaults for the ones that have one.
PROXY_PATHS: Mapping[tuple[str, str], str | None] = {
    ("proxy", "state"): "~/.local/state/gitvow/state.sqlite",
    ("proxy", "confdir"): "~/.local/share/gitvow/mitmproxy",
    ("audit", "path"): "~/.local/state/gitvow/audit.jsonl",
}

#: Where the run's own directory (the proxy's socket, the CA bundle) appears inside.
RUN_DIR = Path("/run/gitvow")


@dataclass(frozen=True, slots=True)
class Layout:
    """The file system of one sandbox, as paths of the machine (``/`` is read-only besides)."""

    home: Path
    """The home directory inside (the operator's path, so tools find what they expect)."""
    agent_home: Path | None
    """A directory bound at ``home`` (``--home``); None: an empty one that lives as long as the run."""
    workdir: Path
    writable: tuple[Path, ...]
    readable: tuple[Path, ...]
    """Bound read-only over the empty home (tools installed under it: ``--allow-read``)."""
    git_mounts: tuple[Path, ...]
    """``.git`` directories bound on themselves (a mount point cannot be renamed or replaced)."""
    read_only: tuple[Path, ...]
    """Inside writable paths, kept read-only: what git outside would obey or run (:mod:`gitvow_sandbox.gitseal`)."""
    hidden: tuple[Path, ...]
    run_dir: Path
    sealed: gitseal.Seal | None = None
    """The repositories sealed, to look at again after the run (:func:`gitseal.unsealed_submodules`)."""


class LayoutError(Exception):
    """A layout that would expose what the sandbox must hide."""


def expand(path: str, home: Path) -> Path:
    """``~`` is the operator's home; a relative path is taken from the current directory."""
    if path == "~" or path.startswith("~/"):
        return home / path[2:]
    return Path(path).absolute()


def _policy_file_values(data: Mapping[str, Any]) -> Iterator[str]:
    """Every string under a key ending in ``_file`` (secret, token and password files)."""
    for key, value in data.items():
        if isinstance(value, Mapping):
            yield from _policy_file_values(value)
        elif isinstance(value, str) and key.endswith("_file"):
            yield value


def proxy_files(data: Mapping[str, Any], policy_path: Path, home: Path) -> list[Path]:
    """The proxy's files a policy names: the policy itself, secret and token files, the state
    store (with SQLite's companions), mitmproxy's directory (the CA's private key), the audit log."""
    paths = [policy_path]
    paths += [expand(value, home) for value in _policy_file_values(data)]
    for (section, key), default in PROXY_PATHS.items():
        table = data.get(section)
        value = table.get(key, default) if isinstance(table, Mapping) else default
        if not isinstance(value, str) or value in ("-", ":memory:") or "://" in value:
            continue
        path = expand(value, home)
        paths.append(path)
        if key == "state":
            paths += [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
    return paths


def working_tree(cwd: Path) -> Path:
    """The git top level of ``cwd`` (read from the file system, no git process), else ``cwd``."""
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            return candidate
    return cwd


def _resolved(paths: Iterable[Path]) -> list[Path]:
    """Each existing path at its resolved location (where a bind lands), without repeats."""
    out: dict[Path, None] = {}
    for path in paths:
        target = path.resolve()
        if target.exists():
            out[target] = None
    return list(out)


def plan(
    *,
    cwd: Path,
    home: Path,
    run_dir: Path,
    allow_write: Iterable[Path] = (),
    allow_read: Iterable[Path] = (),
    hide: Iterable[Path] = (),
    agent_home: Path | None = None,
) -> Layout:
    """The layout for a run from ``cwd``; raises LayoutError when the working tree would bind
    the whole machine or the operator's home in."""
    tree = working_tree(cwd.resolve())
    real_home = home.resolve()
    if tree == Path("/") or tree == real_home or tree in real_home.parents:
        raise LayoutError(f"the working tree would be {tree}, which holds your home directory; "
                          "run from a project directory")
    writable = _resolved([tree, *allow_write])
    try:
        sealed = gitseal.seal(writable, home, global_configs=_global_configs(home))
    except gitseal.SealError as exc:
        raise LayoutError(str(exc)) from None
    hidden = _resolved([*(home / name for name in HOME_CREDENTIALS), *hide])
    return Layout(home=home, agent_home=agent_home, workdir=cwd, writable=tuple([*writable, *sealed.writable]),
                  readable=tuple(_resolved(allow_read)), git_mounts=tuple(sealed.mount_points),
                  read_only=tuple(sealed.read_only), hidden=tuple(hidden), run_dir=run_dir, sealed=sealed)


def _global_configs(home: Path) -> list[Path]:
    """The operator's own git configuration files (``git help config``, FILES)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [Path("/etc/gitconfig"), Path(xdg) / "git" / "config", home / ".gitconfig"]


#: Mounted empty and private inside.
SCRATCH = (Path("/tmp"), Path("/var/tmp"), Path("/run"), Path("/dev/shm"))


def _shown(path: Path, layout: Layout) -> bool:
    """Whether ``path`` of the machine would be seen inside without hiding: under a bind, or
    under ``/`` where no empty home or scratch directory is mounted over it."""
    if any(path == bound or bound in path.parents for bound in (*layout.readable, *layout.writable)):
        return True
    covered = (layout.home, layout.home.resolve(), *SCRATCH)
    return not any(path == over or over in path.parents for over in covered)


def mount_arguments(layout: Layout, resolv_conf: Path = Path("/etc/resolv.conf")) -> list[str]:
    """bubblewrap's file-system arguments for ``layout``, in the order that makes them hold."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for scratch in SCRATCH:  # /run: the host's sockets (docker, dbus) are not ours
        args += ["--tmpfs", str(scratch)]
    if layout.agent_home is not None:
        args += ["--bind", str(layout.agent_home), str(layout.home)]
    else:
        args += ["--tmpfs", str(layout.home)]
    for path in layout.readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in layout.writable:
        args += ["--bind", str(path), str(path)]
    for path in layout.git_mounts:
        args += ["--bind", str(path), str(path)]
    for path in layout.read_only:
        args += ["--ro-bind", str(path), str(path)]
    # An empty file, not /dev/null: device nodes do not open under a user namespace's bind, and
    # a file that cannot be opened breaks the tools that read it (git with an unreadable config).
    empty = layout.run_dir / "empty"
    empty.touch(mode=0o444)
    for path in layout.hidden:
        if not _shown(path, layout):
            continue  # under the empty home or a private scratch directory: absent inside
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", str(empty), str(path)]
    if resolv_conf.exists() or resolv_conf.is_symlink():
        # No name server inside: nothing to ask, and a query could not leave (loopback only).
        args += ["--ro-bind", str(empty), str(resolv_conf.resolve())]
    args += ["--ro-bind", str(layout.run_dir), str(RUN_DIR)]
    return args
