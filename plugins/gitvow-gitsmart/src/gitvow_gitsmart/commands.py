"""``git`` command lines → operations, for the agent gate (``git push`` is ``git.push``)."""

from __future__ import annotations

from collections.abc import Sequence

from gitvow.request import ToolCall

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


def _push_operations(rest: Sequence[str]) -> tuple[str, ...]:
    """``git.push``, plus ``ref.force`` and ``ref.delete`` where the command line shows them
    (``--force``, ``+ref``, ``--delete``, ``:ref``). The early word: the proxy judges the pushed
    pack itself, where an update that is not a fast-forward is forced whatever the flags."""
    flags = {a.split("=", 1)[0] for a in rest if a.startswith("-")}
    specs = [a for a in rest if not a.startswith("-")]
    operations = ["git.push"]
    if flags & _FORCING or any(a.startswith("+") for a in specs):
        operations.append("ref.force")
    if flags & _DELETING or any(a.startswith(":") and len(a) > 1 for a in specs):
        operations.append("ref.delete")
    return tuple(operations)


def _push_summary(operations: tuple[str, ...]) -> str:
    words = [w for op, w in (("ref.force", "force"), ("ref.delete", "deletes a ref")) if op in operations]
    return "git push" + (f" ({', '.join(words)})" if words else "")


def classify_git_command(argv: Sequence[str]) -> ToolCall | None:
    found = git_subcommand(argv)
    if found is None:
        return None
    sub, rest = found
    if sub == "push":
        return ToolCall(_push_operations(rest), repo=_remote_repo(rest), adapter="gitsmart",
                        summary=_push_summary(_push_operations(rest)))
    if sub in _FETCHING:
        return ToolCall(("git.fetch",), repo=_remote_repo(rest), adapter="gitsmart", summary=f"git {sub}")
    return None
