"""Edits of ``[paths]`` (protected paths) judged at the gate, for agents the policy names.

The proxy judges the paths a push changes, from the pushed objects; the gate sees the edit
before it is made, so an agent is told at once (and the human asked) instead of finding out
at the push. What counts is the path relative to the repository the edit lands in, after
``./``, ``..``, absolute spellings and symlinks inside the repository are resolved, matched
case-insensitively by :func:`gitvow.change_rules.path_matches`. ``refuse`` denies with
``path_protected``; ``stage`` asks the human.

Edit tools name their files. A shell command's writes are read where the command line shows
them plainly (see :data:`WRITERS` and redirections ``>``, ``>>``, ``>|``, ``&>`` of the line's
top level); a target spelled with a variable or a substitution, a script's own writes,
``dd of=``, ``git checkout``/``restore`` and redirections inside ``sh -c`` are not read: the
proxy, which reads the pushed commits, is the boundary for what reaches the forge.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitvow.change_rules import ChangeRules, _one, compile_rules, path_matches
from gitvow.default_paths import DEFAULT_PROTECTED_PATHS
from gitvow_gate.forge import _GIT_VALUE_OPTIONS, _git_subcommand
from gitvow_gate.shell import Command, tokenize

CODE = "path_protected"
#: Programs whose non-option arguments are files they write, delete or move (``cp``'s and
#: ``install``'s last argument only: their sources are read). ``sed``/``perl`` only with ``-i``.
WRITERS = frozenset({"rm", "unlink", "shred", "truncate", "touch", "mv", "tee", "ln", "chmod", "cp", "install",
                     "sed", "perl", "git"})
_DEST_ONLY = frozenset({"cp", "install", "ln"})
_GIT_WRITERS = frozenset({"rm", "mv"})
_GLOB = frozenset("*?[")
_WALK_LIMIT = 5000


@dataclass(frozen=True, slots=True)
class Hit:
    """A protected path an act writes: the repository-relative path, the rule, its verdict."""

    path: str
    pattern: str
    verdict: str

    def reason(self) -> str:
        if self.verdict == "refuse":
            return f"{CODE}: {self.path} is a protected path ([paths] {self.pattern!r} = refuse)"
        return (f"{CODE}: {self.path} is a protected path ([paths] {self.pattern!r} = stage): "
                "a human approves the change")


def _rules(core: Mapping[str, Any]) -> ChangeRules:
    return compile_rules(core)


def _relative(full: str, repo: str) -> list[str]:
    """``full``'s spellings relative to ``repo``: as written (normalised) and with symlinks resolved."""
    out: list[str] = []
    for path, root in ((os.path.normpath(full), os.path.abspath(repo)),
                       (os.path.realpath(full), os.path.realpath(repo))):
        rel = os.path.relpath(path, root)
        if rel != "." and not rel.startswith(".." + os.sep) and rel != ".." and rel not in out:
            out.append(rel.replace(os.sep, "/"))
    return out


def _walk_names(directory: str) -> set[str] | None:
    """The names of everything under ``directory`` (without ``.git``), or None past the limit."""
    names: set[str] = set()
    count = 0
    for _root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != ".git"]
        names.update(n.lower() for n in dirs)
        names.update(n.lower() for n in files)
        count += len(dirs) + len(files)
        if count > _WALK_LIMIT:
            return None
    return names


def _matches(rel: str, directory: bool, full: str, pattern: str) -> bool:
    if not directory:
        return path_matches(rel, pattern)
    text = pattern.strip("/")
    if "/" in text:  # an anchored pattern: could it name the directory or something in it
        return path_matches(rel + "/", pattern)
    if path_matches(rel, pattern):
        return True
    names = _walk_names(full) if os.path.isdir(full) else set()
    if names is None:
        return True  # too large to read: it may hold one
    return any(_one(name, text) for name in names)


def _patterns(core: Mapping[str, Any]) -> list[str]:
    """The ``[paths]`` patterns in force, read without the matcher."""
    paths = core.get("paths") or {}
    found = list(DEFAULT_PROTECTED_PATHS) if paths.get("defaults", True) else []
    return found + list(paths.get("rules") or ())


def _could_match(rel: str, patterns: Sequence[str]) -> bool:
    """Whether some pattern could name ``rel``: each literal piece of the pattern occurs in the
    path (case-blind). A cheap screen so that an edit of an ordinary file never loads the
    matcher; a pattern with a character class or braces always passes it."""
    lowered = rel.lower()
    for pattern in patterns:
        if "[" in pattern or "{" in pattern:
            return True
        pieces = [p for p in pattern.lower().replace("?", "*").replace("/", "*").split("*") if p]
        if all(piece in lowered for piece in pieces):
            return True
    return False


def judge_paths(core: Mapping[str, Any], fulls: Iterable[tuple[str, bool]], repo: str) -> Hit | None:
    """The strictest rule over ``fulls`` (absolute paths, each with whether it is a directory
    whose whole content changes): the first ``refuse``, else the first ``stage``, else None."""
    patterns = _patterns(core)
    candidates = [(full, directory, rel) for full, directory in fulls for rel in _relative(full, repo)
                  if directory or os.path.isdir(full) or _could_match(rel, patterns)]
    if not candidates:
        return None
    rules = _rules(core)
    staged: Hit | None = None
    for full, directory, rel in candidates:
        for pattern, verdict in rules.paths:
            if _matches(rel, directory or os.path.isdir(full), full, pattern):
                hit = Hit(rel + ("/" if directory and not rel.endswith("/") else ""), pattern, verdict)
                if verdict == "refuse":
                    return hit
                staged = staged or hit
    return staged


# -- shell commands -----------------------------------------------------------------------


def _operands(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    ended = False
    for arg in args:
        if ended or not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg == "--":
            ended = True
    return out


def _in_place(args: Sequence[str]) -> bool:
    return any(a == "--in-place" or a.startswith("--in-place=") or (a.startswith("-") and not a.startswith("--")
               and "i" in a[1:]) for a in args)


def _targets(command: Command) -> list[str]:
    """The files ``command`` writes, as its line names them (see :data:`WRITERS`)."""
    program, args = command.program, command.args
    if command.indirect or program not in WRITERS:
        return []
    if program == "git":
        sub = _git_subcommand(args)
        if sub not in _GIT_WRITERS:
            return []
        return _operands(args[list(args).index(sub) + 1:])
    if program in ("sed", "perl"):
        if not _in_place(args):
            return []
        operands = _operands(args)
        scripted = any(a in ("-e", "-f", "--expression", "--file") or a.startswith(("--expression=", "--file="))
                       for a in args)
        return operands if scripted else operands[1:]
    operands = _operands(args)
    if program in _DEST_ONLY:
        for i, arg in enumerate(args):
            if arg in ("-t", "--target-directory") and i + 1 < len(args):
                return [args[i + 1]]
            if arg.startswith("--target-directory="):
                return [arg.partition("=")[2]]
        return operands[-1:] if len(operands) > 1 else []
    return operands


def redirections(line: str) -> list[str]:
    """The files the line's top-level output redirections write (``> f``, ``>>f``, ``2> f``, ``&> f``)."""
    out: list[str] = []
    for words in tokenize(line) or ():
        for i, word in enumerate(words):
            body = word.lstrip("0123456789&")
            if not body.startswith(">") or body.startswith(">&"):
                continue
            target = body.lstrip(">|")
            if not target and i + 1 < len(words):
                target = words[i + 1]
            if target and not target.startswith("&"):
                out.append(target)
    return out


def _resolve(target: str, where: str) -> tuple[str, bool] | None:
    """The absolute path of ``target`` (a glob as the directory it ranges over), or None when a
    variable or substitution hides it."""
    if not target or "$" in target or "`" in target or target.startswith("~") or target == "/dev/null":
        return None
    full = os.path.normpath(os.path.join(where, target))
    if _GLOB & set(full):
        parts = full.split("/")
        first = next(i for i, part in enumerate(parts) if _GLOB & set(part))
        return ("/".join(parts[:first]) or "/", True)
    return full, target.endswith("/")


def _git_dir(command: Command, where: str) -> str:
    """Where ``git -C DIR …`` runs: each ``-C`` is relative to the one before (its paths are
    relative to it). A ``-C`` the gate cannot resolve keeps the directory unknown: the
    repository root, which a relative target under it still names conservatively."""
    args, i = command.args, 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            resolved = _resolve(args[i + 1], where)
            where = resolved[0] if resolved is not None else where
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    return where


def shell_writes(commands: Sequence[Command], line: str, cwd: str) -> list[tuple[str, bool]]:
    """What a shell line writes, as :func:`judge_paths` takes it; ``cd`` earlier in the line is followed."""
    where = os.path.abspath(cwd)
    found: list[tuple[str, bool]] = []
    for command in commands:
        if command.program in ("cd", "pushd") and not command.indirect:
            operands = _operands(command.args)
            resolved = _resolve(operands[0], where) if operands else None
            where = resolved[0] if resolved is not None and not resolved[1] else where
            continue
        here = _git_dir(command, where) if command.program == "git" else where
        for target in _targets(command):
            resolved = _resolve(target, here)
            if resolved is not None:
                found.append(resolved)
    for target in redirections(line):
        resolved = _resolve(target, os.path.abspath(cwd))
        if resolved is not None:
            found.append(resolved)
    return found


def may_write(commands: Sequence[Command] | None, line: str) -> bool:
    """Cheap: whether the line could write a file at all (so a plain ``ls`` costs nothing)."""
    if ">" in line:
        return True
    return bool(commands) and any(c.program in WRITERS and not c.indirect for c in commands or ())
