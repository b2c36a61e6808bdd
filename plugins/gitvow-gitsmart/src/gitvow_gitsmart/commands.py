"""``git`` command lines → operations, for the agent gate (``git push`` is ``git.push``)."""

from __future__ import annotations

from collections.abc import Sequence

from gitvow.change import DELETE_OPERATION, DELETED, FAST_FORWARD, FORCE_OPERATION, FORCED, Change, RefChange
from gitvow.request import ZERO_OID, ToolCall
from gitvow_gitsmart.push_options import option_operations

_FETCHING = frozenset({"fetch", "pull", "clone", "ls-remote", "submodule"})
# git's global options that take a separate value: ``git -C dir push``.
_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"})


def git_subcommand(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """The subcommand of a ``git`` argv and the arguments after it, skipping global options."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "git":
        return None
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option in _VALUE_OPTIONS and args:
            args.pop(0)
    if not args:
        return None
    return args[0], args[1:]


def _remote_repo(rest: Sequence[str]) -> str | None:
    """The repository of a remote given as a URL (``https://host/team/app.git``,
    ``git@host:team/app.git``): its path, as the forge's adapter reads it on the wire. A
    remote's name (``origin``) says nothing the gate can read: None."""
    remote = next((a for a in rest if not a.startswith("-")), None)
    if remote is None:
        return None
    if "://" in remote:
        from urllib.parse import urlsplit  # urllib.parse (and ipaddress) only for a remote given as a URL

        path = urlsplit(remote).path
    elif ":" in remote and "@" in remote.split(":", 1)[0]:
        path = remote.split(":", 1)[1]
    else:
        return None
    path = path.strip("/").removesuffix(".git").strip("/")
    return path if path.count("/") >= 1 else None


_FORCING = frozenset({"--force", "-f", "--force-with-lease", "--force-if-includes", "--mirror"})
_DELETING = frozenset({"--delete", "-d", "--mirror", "--prune"})
#: Options that push refs the command line does not name.
_IMPLICIT = {"--all": "--all pushes every local branch", "--branches": "--branches pushes every local branch",
             "--mirror": "--mirror pushes (and deletes) every ref", "--tags": "--tags pushes every local tag",
             "--prune": "--prune deletes remote branches the command line does not name"}
#: ``git push`` options that take a separate value (``-o ci.skip``, ``--repo origin``).
_PUSH_VALUE_OPTIONS = frozenset({"-o", "--push-option", "--repo", "--receive-pack", "--exec"})
_OID_LIKE = frozenset("0123456789abcdef")


def _push_words(rest: Sequence[str]) -> tuple[set[str], list[str]]:
    """The options (names only) and the positional words of ``git push``'s arguments: the
    remote, then the refspecs. A value-taking option's value is not a positional word."""
    flags, words, _ = _push_arguments(rest)
    return flags, words


def _push_arguments(rest: Sequence[str]) -> tuple[set[str], list[str], list[str]]:
    """As :func:`_push_words`, plus the push options (``-o X``, ``--push-option=X``)."""
    flags: set[str] = set()
    words: list[str] = []
    options: list[str] = []
    args = iter(rest)
    for arg in args:
        if arg == "--":
            words.extend(args)
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            flags.add(name)
            if name in _PUSH_VALUE_OPTIONS and not eq:
                value = next(args, "")
            if name == "--push-option":
                options.append(value)
        elif arg.startswith("-") and len(arg) > 1:
            for i, letter in enumerate(arg[1:], 1):  # bundled short options: -fu, -oVALUE
                flags.add(f"-{letter}")
                if f"-{letter}" in _PUSH_VALUE_OPTIONS:
                    value = arg[i + 1:] if i < len(arg) - 1 else next(args, "")
                    if letter == "o":
                        options.append(value)
                    break
        else:
            words.append(arg)
    return flags, words, options


def _destination(spec: str) -> str | None:
    """The remote ref a refspec writes, in full (``refs/heads/x``), or None when the command line
    alone cannot tell (``HEAD``, ``@``, a commit id, a wildcard: the ref the agent's checkout
    points at)."""
    source, _, dest = spec.partition(":")
    name = dest or source
    if not name or name in ("HEAD", "@") or "*" in name or name.startswith("HEAD~") or name.startswith("HEAD^"):
        return None
    if not dest and len(name) >= 7 and set(name.lower()) <= _OID_LIKE:
        return None  # a bare commit id names no remote ref
    if name.startswith("refs/"):
        return name
    if name.startswith(("heads/", "tags/")):
        return f"refs/{name}"
    return f"refs/heads/{name}"


def push_change(rest: Sequence[str]) -> Change:
    """The ref updates a ``git push`` command line shows: each refspec's destination (``src:dst``,
    ``dst``, ``:dst`` deleted, ``+`` or ``--force`` forced, ``--delete`` deleting every named ref).
    Which commit it sends and whether it is a fast-forward only the pushed pack can tell (the
    proxy reads it); here a plain update counts as a fast-forward. What the line does not name
    (no refspec, ``HEAD``, ``--all``, ``--mirror``) is in :attr:`Change.unread_refs`."""
    flags, words = _push_words(rest)
    specs = words[1:]
    forced_all = bool(flags & _FORCING)
    deleting = bool(flags & {"--delete", "-d"})
    unread = [why for flag, why in _IMPLICIT.items() if flag in flags]
    if not specs and not unread:
        unread.append("a push without a refspec writes what push.default and the branch's upstream say")
    refs: list[RefChange] = []
    for spec in specs:
        plus = spec.startswith("+")
        body = spec[1:] if plus else spec
        deletes = deleting or (body.startswith(":") and len(body) > 1)
        ref = _destination(body[1:] if body.startswith(":") else body)
        if ref is None:
            unread.append(f"{spec!r} names the ref of the local checkout, which only git knows")
            continue
        kind = DELETED if deletes else FORCED if plus or forced_all else FAST_FORWARD
        refs.append(RefChange(ref, ZERO_OID, ZERO_OID, kind))
    return Change(refs=tuple(refs), unread_refs="; ".join(unread))


def _push_operations(rest: Sequence[str], change: Change) -> tuple[str, ...]:
    """``git.push``, plus ``ref.force`` and ``ref.delete`` where the command line shows them
    (``--force``, ``+ref``, ``--delete``, ``:ref``, ``--mirror``, ``--prune``). The early word:
    the proxy judges the pushed pack itself, where an update that is not a fast-forward is
    forced whatever the flags."""
    flags, _ = _push_words(rest)
    operations = ["git.push", *change.operations()]
    if flags & _FORCING and FORCE_OPERATION not in operations:
        operations.append(FORCE_OPERATION)
    if flags & _DELETING and DELETE_OPERATION not in operations:
        operations.append(DELETE_OPERATION)
    return tuple(sorted(operations, key=("git.push", FORCE_OPERATION, DELETE_OPERATION).index))


def _push_summary(operations: tuple[str, ...]) -> str:
    """What a denial line names (the refused ref is in its reason)."""
    words = [w for op, w in ((FORCE_OPERATION, "force"), (DELETE_OPERATION, "deletes a ref")) if op in operations]
    return "git push" + (f" ({', '.join(words)})" if words else "")


def classify_git_command(argv: Sequence[str]) -> ToolCall | None:
    found = git_subcommand(argv)
    if found is None:
        return None
    sub, rest = found
    if sub == "push":
        change = push_change(rest)
        extra, unread = option_operations(_push_arguments(rest)[2])
        if unread:
            return ToolCall(("unknown",), repo=_remote_repo(_push_words(rest)[1][:1]), adapter="gitsmart",
                            summary="git push", note=f"push option {unread!r} is not read")
        operations = tuple(dict.fromkeys(("git.push", *extra, *_push_operations(rest, change))))  # the proxy's order
        _, words = _push_words(rest)
        return ToolCall(operations, repo=_remote_repo(words[:1]), adapter="gitsmart",
                        summary=_push_summary(operations), change=change)
    if sub in _FETCHING:
        return ToolCall(("git.fetch",), repo=_remote_repo(rest), adapter="gitsmart", summary=f"git {sub}")
    return None
