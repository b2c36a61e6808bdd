"""Built-in checks stated on the parsed command — program, flags, targets — not on its text.

A regular expression over ``rm -rf /`` misses ``rm -fr /``, ``rm -r -f /``, ``rm --recursive
--force /``, ``sh -c 'rm -rf /'`` and ``rm -rf /home/alice``. Here the command arrives already
taken apart by :mod:`gitvow_gate.shell` (wrappers, ``sh -c``, ``eval``, sequences, quoting), so
a check only has to read the flags the way the program reads them and resolve each target to
the path it would reach.

``recursive_delete``: a recursive ``rm`` (``-r``, ``-R``, any cluster holding them,
``--recursive`` or an unambiguous prefix of it, before or after the targets) or a ``find``
that deletes (``-delete``, ``-exec rm -r…``) with no filter, whose target is ``/``, a home
directory (``~``, ``$HOME``, ``~user``, ``/home/NAME``, ``/Users/NAME``, ``/root``), the
repository root, or a directory holding one of them — also as a glob over such a directory
(``/*``, ``~/*``, ``*`` at the repository root). Relative targets are resolved against the
directory the command runs in, following ``cd`` earlier in the same line. A target the gate
cannot resolve (a variable, a substitution, ``{}``, the arguments ``xargs`` reads) is
*uncertain*: the call is confirmed, never allowed unseen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitvow_gate.gate_policy import find_repo_root
from gitvow_gate.shell import Command

CHECKS: tuple[str, ...] = ("recursive_delete",)
_GLOB = frozenset("*?[")
_HOME_PARENTS = ("/home", "/Users", "/var/home")
#: find expressions that narrow what it matches: with one, the roots themselves are not the target.
_FIND_FILTERS = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type", "-newer",
    "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-user", "-group", "-perm", "-empty",
    "-links", "-inum", "-samefile", "-lname", "-ilname", "-uid", "-gid", "-nouser", "-nogroup", "-maxdepth",
})


@dataclass(frozen=True, slots=True)
class Finding:
    """What a check found in one command: the ``target`` as written (and what it resolves to), and
    whether it is ``certain`` (a protected path) or only could be one."""

    target: str
    certain: bool


def run(check: str, commands: Sequence[Command], cwd: str | None, env: Mapping[str, str]) -> Finding | None:
    """The first certain finding of ``check`` over the line's commands, else the first uncertain one."""
    if check != "recursive_delete":
        return None
    uncertain: Finding | None = None
    where: str | None = os.path.abspath(cwd) if cwd else None
    for command in commands:
        if command.program in ("cd", "pushd") and not command.indirect:
            where = _cd(where, command.args, env)
            continue
        found = recursive_delete(command, where, env)
        if found is not None and found.certain:
            return found
        uncertain = uncertain or found
    return uncertain


def _cd(where: str | None, args: Sequence[str], env: Mapping[str, str]) -> str | None:
    targets = [a for a in args if not a.startswith("-") or a == "-"]
    if not targets:
        return _home(env)
    resolved = _resolve(targets[0], where, env)
    return None if resolved is None or _GLOB & set(resolved) else resolved


def _home(env: Mapping[str, str]) -> str | None:
    home = env.get("HOME")
    return os.path.normpath(home) if home else None


def _resolve(target: str, where: str | None, env: Mapping[str, str]) -> str | None:
    """The absolute, normalised path of ``target``, or None when it cannot be known."""
    home = _home(env)
    for spelling in ("${HOME}", "$HOME"):
        if target == spelling or target.startswith(spelling + "/"):
            if home is None:
                return None
            target = home + target[len(spelling):]
    if target == "~" or target.startswith("~/"):
        if home is None:
            return None
        target = home + target[1:]
    elif target.startswith("~"):
        user, _, rest = target[1:].partition("/")
        if not user or "$" in user:
            return None
        target = f"/home/{user}" + (f"/{rest}" if rest else "")
    if "$" in target or "`" in target or "{}" in target or target == "-":
        return None
    if not target.startswith("/"):
        if where is None:
            return None
        target = os.path.join(where, target)
    return os.path.normpath(target).replace("//", "/")


def protected(path: str, env: Mapping[str, str], repo: str | None) -> bool:
    """``/``, a home directory, the repository root, or a directory that holds one of them."""
    if path == "/":
        return True
    home = _home(env)
    guarded = [p for p in (home, "/root", repo) if p]
    for parent in _HOME_PARENTS:
        if path == parent or os.path.dirname(path) == parent:
            return True
    return any(path == p or p.startswith(path.rstrip("/") + "/") for p in guarded)


def _target_danger(target: str, where: str | None, env: Mapping[str, str]) -> Finding | None:
    resolved = _resolve(target, where, env)
    if resolved is None:
        return Finding(target, certain=False)
    repo = find_repo_root(where) if where else None  # the repository the command runs in
    # a glob deletes entries of the directory before its first pattern character
    path = resolved
    if _GLOB & set(resolved):
        parts = resolved.split("/")
        first = next(i for i, part in enumerate(parts) if _GLOB & set(part))
        path = "/".join(parts[:first]) or "/"
    shown = target if target == resolved else f"{target} = {resolved}"
    return Finding(shown, certain=True) if protected(path, env, repo) else None


def _recursive_rm(args: Sequence[str]) -> tuple[bool, list[str]]:
    recursive = False
    targets: list[str] = []
    options_end = False
    for arg in args:
        if options_end or arg == "-" or not arg.startswith("-"):
            targets.append(arg)
        elif arg == "--":
            options_end = True
        elif arg.startswith("--"):
            name = arg[2:].partition("=")[0]
            # GNU getopt accepts any unambiguous prefix: --recursive, --recur, --r
            if name and "recursive".startswith(name):
                recursive = True
        elif "r" in arg[1:] or "R" in arg[1:]:
            recursive = True
    return recursive, targets


def recursive_delete(command: Command, where: str | None, env: Mapping[str, str]) -> Finding | None:
    """A recursive delete of a protected path in ``command`` (see the module docstring)."""
    if command.indirect:
        return None
    if command.program == "rm":
        recursive, targets = _recursive_rm(command.args)
        if not recursive:
            return None
        if command.via[-1:] == ("find",) and targets and all("{}" in target for target in targets):
            return None  # `find ROOT -exec rm -r {} +`: the find is judged, on its roots (_find_deletes)
        if not targets:
            if "xargs" in command.via:
                return Finding("the arguments xargs reads from standard input", certain=False)
            return None
    elif command.program == "find":
        targets = _find_deletes(command.args)
        if not targets:
            return None
    else:
        return None
    uncertain: Finding | None = None
    for target in targets:
        found = _target_danger(target, where, env)
        if found is not None and found.certain:
            return found
        uncertain = uncertain or found
    return uncertain


def _find_deletes(args: Sequence[str]) -> list[str]:
    """The roots of a ``find`` that deletes everything under them (no filter), else []."""
    roots: list[str] = []
    i = 0
    while i < len(args) and not args[i].startswith(("-", "(", "!")):
        roots.append(args[i])
        i += 1
    expression = list(args[i:])
    if any(word in _FIND_FILTERS for word in expression):
        return []
    deletes = "-delete" in expression
    for j, word in enumerate(expression):
        if word in ("-exec", "-execdir", "-ok", "-okdir") and j + 1 < len(expression):
            body = expression[j + 1 :]
            if os.path.basename(body[0]) == "rm" and _recursive_rm(body[1:])[0]:
                deletes = True
    return (roots or ["."]) if deletes else []
