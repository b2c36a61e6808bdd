"""Sealing a repository's ``.git`` inside the sandbox: commits work, git outside obeys nothing the agent wrote.

The working tree is writable, so its ``.git`` would be too, and git outside the sandbox (the
operator's ``git status`` later) reads configuration from it and runs what that names. What
git reads follows ``git help config`` (FILES, ``include``/``includeIf``) and
``gitrepository-layout``:

- ``.git`` itself is bound on itself: a mount point cannot be renamed, removed or replaced,
  so the agent cannot put a ``.git`` of its own in its place. A ``.git`` *file* (a linked
  worktree, a submodule: ``gitdir: PATH``) is bound read-only and followed as git follows it;
  the repository it names is bound writable where it lies outside the tree. A ``.git`` that
  is a symbolic link is refused (the link itself would stay replaceable).
- Read-only in every git directory (the tree's, its common directory, each linked worktree's
  and each submodule's under ``modules/``): ``config``, ``config.worktree``, ``commondir``,
  ``gitdir``, ``hooks/`` and ``info/``; and any file or directory a configuration names that
  lies in a writable path: ``include.path``/``includeIf.*.path`` (followed), ``core.hooksPath``,
  a submodule's ``core.worktree``'s ``.git`` file, and a program named by path in a key git
  runs (``core.fsmonitor``, filters, diff and merge drivers, …).
- Files git would obey if they appeared (``commondir``, ``config.worktree``) cannot be
  blocked by a mount unless they exist, so they are made before the run where missing:
  ``commondir`` holding ``.`` (the directory itself, which git reads as no redirection) and an
  empty ``config.worktree``; both stay, harmless, after the run.
- Everything else stays writable: objects, refs, logs, the index, ``HEAD``, ``packed-refs``
  and git's lock files, so ``git commit`` works inside.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Files of a git directory that git reads as configuration or as a pointer to another one.
CONFIG_FILES = ("config", "config.worktree", "commondir", "gitdir")
#: Directories of a git directory whose contents git runs or obeys.
CONFIG_DIRS = ("hooks", "info")
#: Keys whose value is a command git runs: a program given by path there is sealed when writable.
COMMAND_KEY = re.compile(
    r"^(core\.(fsmonitor|sshcommand|editor|pager|askpass)|sequence\.editor|gpg(\.[^.]+)?\.program"
    r"|credential(\..+)?\.helper|diff\.external|diff\..+\.(textconv|command)|merge\..+\.driver"
    r"|filter\..+\.(clean|smudge|process)|uploadpack\.packobjectshook|pager\..+|alias\..+"
    r"|remote\..+\.(receivepack|uploadpack)|mergetool\..+\.cmd|difftool\..+\.cmd)$")
#: Words without which a configuration file names nothing sealed here (git is not asked to parse it).
KEYWORDS = ("include", "hookspath", "worktree", "fsmonitor", "command", "editor", "pager", "askpass", "program",
            "helper", "external", "textconv", "driver", "clean", "smudge", "process", "hook", "alias", "pack", "cmd")
#: How deep ``modules/`` is searched for submodules' git directories (names may hold slashes).
MODULES_DEPTH = 6


class SealError(Exception):
    """A repository that cannot be sealed (its ``.git`` is a symbolic link, or unreadable)."""


@dataclass
class Seal:
    """What to bind for the repositories of the writable paths, as paths of the machine."""

    writable: list[Path] = field(default_factory=list)
    """Git directories outside every writable path (a linked worktree's common directory)."""
    mount_points: list[Path] = field(default_factory=list)
    """``.git`` directories bound on themselves, so they stay where they are."""
    read_only: list[Path] = field(default_factory=list)
    git_dirs: list[Path] = field(default_factory=list)
    """Every git directory sealed (what git in them reads as configuration is read-only)."""
    trees: list[Path] = field(default_factory=list)
    """The top-level working trees whose repositories were sealed."""


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def git_dir(tree: Path) -> Path | None:
    """The git directory of ``tree`` as git finds it (``.git``, or what a ``.git`` file names); None if none."""
    dotgit = tree / ".git"
    if dotgit.is_symlink():
        raise SealError(f"{dotgit} is a symbolic link, which the sandbox cannot keep in place; replace it with "
                        f"the directory it points to (or a `gitdir:` file) and run again")
    if dotgit.is_dir():
        return dotgit
    if not dotgit.exists():
        return None
    try:
        text = dotgit.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SealError(f"{dotgit}: cannot read the `gitdir:` file ({exc})") from None
    if not text.startswith("gitdir:"):
        raise SealError(f"{dotgit}: not a git directory and not a `gitdir: PATH` file")
    target = (tree / text.removeprefix("gitdir:").strip()).resolve()
    if not target.is_dir():
        raise SealError(f"{dotgit} names {target}, which is not a directory")
    return target


def common_dir(gitdir: Path) -> Path:
    """The repository's common directory: what ``commondir`` names, else ``gitdir``."""
    pointer = gitdir / "commondir"
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return gitdir
    except (OSError, UnicodeDecodeError) as exc:
        raise SealError(f"{pointer}: cannot read it ({exc})") from None
    return (gitdir / text).resolve() if text else gitdir


def _config_entries(path: Path) -> list[tuple[str, str]]:
    """``(key, value)`` of one configuration file, as git parses it (without its includes).
    git is asked only when the file holds a word of :data:`KEYWORDS` (start-up time)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        return []
    if not any(word in text for word in KEYWORDS):
        return []
    try:
        done = subprocess.run(["git", "config", "--no-includes", "--file", str(path), "--list", "-z"],
                              capture_output=True, timeout=30, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return []
    entries = []
    for item in done.stdout.decode(errors="replace").split("\0"):
        key, _, value = item.partition("\n")
        if key:
            entries.append((key.lower(), value))
    return entries


def _submodule_paths(gitmodules: Path) -> list[str]:
    """The ``submodule.*.path`` values of a ``.gitmodules`` file, as git reads them."""
    if not gitmodules.is_file():
        return []
    try:
        done = subprocess.run(["git", "config", "--no-includes", "--file", str(gitmodules), "-z", "--get-regexp",
                               r"^submodule\..*\.path$"], capture_output=True, timeout=30, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [item.partition("\n")[2] for item in done.stdout.decode(errors="replace").split("\0") if item]


def _program(value: str) -> str | None:
    """The program of a command value when it is given by path (``!`` of an alias dropped)."""
    words = value.lstrip("!").split()
    return words[0] if words and "/" in words[0] else None


class _Sealer:
    def __init__(self, writable: list[Path], home: Path) -> None:
        self.writable = writable
        self.home = home
        self.seal = Seal()
        self._configs: set[Path] = set()
        self._trees: set[Path] = set()

    def _read_only(self, path: Path) -> None:
        if path.exists() and path not in self.seal.read_only:
            self.seal.read_only.append(path)

    def _inside(self, path: Path) -> bool:
        return _under(path, [*self.writable, *self.seal.writable])

    def repository(self, tree: Path, *, top: bool = True) -> None:
        """Seal the repository of ``tree`` and of each submodule ``.gitmodules`` names in it.
        Only a top-level tree's repository is bound writable where it lies outside the
        writable paths (a linked worktree's): a submodule's stays read-only there, as ``/`` is
        (``.gitmodules`` is the agent's to write, so it must not bind other directories in)."""
        if tree in self._trees:
            return
        self._trees.add(tree)
        gitdir = git_dir(tree)
        if gitdir is None:
            return
        dotgit = tree / ".git"
        if dotgit.is_dir():
            self.seal.mount_points.append(dotgit)
        else:
            self._read_only(dotgit)
        common = common_dir(gitdir)
        for directory in dict.fromkeys((gitdir, common)):
            if not self._inside(directory):
                if not top:
                    return
                self.seal.writable.append(directory)
        self.git_directory(common, tree, linked=False)
        if gitdir != common:
            self.git_directory(gitdir, tree, linked=True)
        for path in _submodule_paths(tree / ".gitmodules"):
            sub = (tree / path).resolve()
            if sub != tree and self._inside(sub) and sub.is_dir():
                self.repository(sub, top=False)

    def git_directory(self, gitdir: Path, tree: Path | None, *, linked: bool, depth: int = 0) -> None:
        """Seal one git directory (a linked worktree's holds only its own files)."""
        if gitdir in self.seal.git_dirs:
            return
        self.seal.git_dirs.append(gitdir)
        if not linked:
            if not (gitdir / "commondir").exists():
                (gitdir / "commondir").write_text(".\n", encoding="utf-8")
            for name in CONFIG_DIRS:
                (gitdir / name).mkdir(exist_ok=True)
                self._read_only(gitdir / name)
        (gitdir / "config.worktree").touch(exist_ok=True)
        for name in CONFIG_FILES:
            self._read_only(gitdir / name)
        for name in ("config", "config.worktree"):
            self.config_file(gitdir / name, base=tree)
        if linked:
            return
        worktrees = gitdir / "worktrees"
        if worktrees.is_dir():
            for entry in sorted(worktrees.iterdir()):
                if entry.is_dir():
                    self.git_directory(entry, None, linked=True)
        for module in self._modules(gitdir / "modules", depth):
            self.git_directory(module, self._module_tree(module), linked=False, depth=depth + 1)

    def _modules(self, root: Path, depth: int) -> Iterator[Path]:
        """Submodules' git directories under ``root`` (a directory holding ``HEAD``)."""
        if depth > MODULES_DEPTH or not root.is_dir():
            return
        stack = [(root, 0)]
        while stack:
            directory, level = stack.pop()
            for entry in sorted(directory.iterdir()):
                if not entry.is_dir() or entry.is_symlink():
                    continue
                if (entry / "HEAD").is_file():
                    yield entry
                elif level < MODULES_DEPTH:
                    stack.append((entry, level + 1))

    def _module_tree(self, module: Path) -> Path | None:
        """A submodule's checkout (its ``core.worktree``), whose ``.git`` file is sealed too."""
        for key, value in _config_entries(module / "config"):
            if key == "core.worktree":
                tree = (module / value).resolve()
                if (tree / ".git").is_file() and self._inside(tree):
                    self._read_only(tree / ".git")
                return tree
        return None

    def config_file(self, path: Path, *, base: Path | None) -> None:
        """Seal what a configuration file names in a writable path; follow its includes."""
        if path in self._configs or not path.is_file():
            return
        self._configs.add(path)
        for key, value in _config_entries(path):
            if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
                target = self._expand(value, path.parent)
                if self._inside(target):
                    if not target.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.touch()
                    self._read_only(target)
                self.config_file(target, base=base)
            elif key == "core.hookspath":
                target = self._expand(value, base or path.parent)
                if self._inside(target):
                    target.mkdir(parents=True, exist_ok=True)
                    self._read_only(target)
            elif COMMAND_KEY.match(key):
                program = _program(value)
                if program is not None:
                    target = self._expand(program, base or path.parent)
                    if self._inside(target):
                        self._read_only(target)

    def _expand(self, value: str, base: Path) -> Path:
        if value == "~" or value.startswith("~/"):
            return (self.home / value[2:]).resolve()
        return (base / value).resolve()


def seal(writable: Iterable[Path], home: Path, global_configs: Iterable[Path] = ()) -> Seal:
    """The binds that seal the repositories at the top of each of ``writable``; SealError
    when one cannot be sealed. ``global_configs`` (the operator's) are read for what they
    name inside a writable path (a ``core.hooksPath`` in the tree)."""
    paths = list(writable)
    sealer = _Sealer(paths, home)
    for tree in paths:
        sealer.repository(tree)
        if git_dir(tree) is not None:
            sealer.seal.trees.append(tree)
    for config in global_configs:
        sealer.config_file(config, base=None)
    return sealer.seal


def unsealed_submodules(seal: Seal) -> list[Path]:
    """Submodules the index of a sealed tree names whose repository was not sealed (read after
    a run): the agent made them, and ``git status`` in the tree runs git in each, which obeys
    that repository's configuration. git is asked for the index only (``ls-files``, with no
    file-system monitor: it runs no program)."""
    sealed = {path.resolve() for path in seal.git_dirs}
    found: list[Path] = []
    for tree in seal.trees:
        try:
            done = subprocess.run(["git", "-C", str(tree), "--no-optional-locks", "-c", "core.fsmonitor=false",
                                   "ls-files", "--stage", "-z"],
                                  capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        for entry in done.stdout.decode(errors="replace").split("\0"):
            info, _, path = entry.partition("\t")
            if not info.startswith("160000 "):
                continue
            checkout = tree / path
            try:
                gitdir = git_dir(checkout) if checkout.is_dir() else None
            except SealError:
                found.append(checkout)
                continue
            if gitdir is not None and gitdir.resolve() not in sealed:
                found.append(checkout)
    return found
