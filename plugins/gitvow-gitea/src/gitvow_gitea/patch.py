"""The paths a patch touches, read by git itself: what Gitea's ``diffpatch`` applies.

Gitea applies a ``POST /repos/{o}/{r}/diffpatch`` with ``git apply --recount --cached …`` in a
clone of the repository, so the paths it writes are the ones git's patch parser reads: from
``diff --git`` headers, and equally from traditional ``---``/``+++`` sections, from ``rename
to``/``copy to`` lines, from quoted names. A parser of our own would have to agree with git's on
every one of those; instead git is asked, with no repository around it:

* ``git apply --numstat -z --recount`` names each file the patch changes by its new name (the
  old name of a deletion), and the same run with ``-R`` (the patch reversed) by its old name:
  together, every path a rename, copy, creation, modification or deletion touches (the
  ``--recount`` Gitea passes too: hunk lengths are counted, not taken from their headers);
* a patch git cannot read (``corrupt patch``, inconsistent names, no patch at all) is
  :class:`~gitvow.api_change.WriteUnreadable`, so the write is refused, never guessed at.

git runs with no configuration but its defaults (no system or global file, an empty ``HOME``)
in an empty directory that is no repository, so no setting and no enclosing repository's
subdirectory changes what it reads.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from functools import cache

from gitvow.api_change import FileWrite, WriteUnreadable, canonical_path

#: How long git may take to read one patch before the write is refused.
GIT_TIMEOUT = 20.0


@cache
def _scratch() -> str:
    """An empty directory (made once per process) that no repository encloses."""
    return tempfile.mkdtemp(prefix="gitvow-patch-")


def _environment(where: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": where,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": os.path.dirname(where),
        "LC_ALL": "C",
    }


def _numstat(patch: bytes, *, reverse: bool) -> list[str]:
    where = _scratch()
    args = ["git", "apply", "--numstat", "-z", "--recount", *(["-R"] if reverse else []), "-"]
    try:
        done = subprocess.run(args, input=patch, capture_output=True, cwd=where, env=_environment(where),
                              timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise WriteUnreadable("git, which reads the patch as the forge applies it, is not installed") from None
    except subprocess.TimeoutExpired:
        raise WriteUnreadable("git took too long to read the patch") from None
    if done.returncode != 0:
        raise WriteUnreadable("git cannot read the patch (git apply refuses it)")
    names: list[str] = []
    for record in done.stdout.split(b"\0"):
        if not record:
            continue
        fields = record.split(b"\t", 2)
        if len(fields) != 3 or not fields[2]:
            raise WriteUnreadable("git's account of the patch could not be read")
        names.append(fields[2].decode("utf-8", "surrogateescape"))
    return names


def patch_paths(patch: bytes) -> list[FileWrite]:
    """Every file ``patch`` touches as git reads it (a rename's or copy's two paths), each
    canonical (:func:`~gitvow.api_change.canonical_path`), or :class:`WriteUnreadable`. git lists
    a reversed patch's files in reverse order, so the two readings are joined, not paired."""
    if not patch.strip():
        raise WriteUnreadable("the patch is empty")
    forward = _numstat(patch, reverse=False)
    backward = _numstat(patch, reverse=True)
    if not forward or len(forward) != len(backward):
        raise WriteUnreadable("git reads no file in the patch")
    paths = dict.fromkeys(canonical_path(name, "a path of the patch") for name in (*forward, *reversed(backward)))
    return [FileWrite(path) for path in paths]


__all__ = ["GIT_TIMEOUT", "patch_paths"]
