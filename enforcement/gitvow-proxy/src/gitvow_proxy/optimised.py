"""``gitvow proxy`` runs under ``python -O``, which turns mitmproxy's per-message type checks off.

mitmproxy checks every field of every HTTP request and response it builds
(``MessageData.__post_init__``), and defines that check only ``if __debug__``. The check is
costly in a running proxy: a request head read off the wire raises and catches three
``TypeError``s to pass, and their reference cycles send the garbage collector round
(docs/benchmarks.md: "Public APIs only"). Python's own switch for such checks is ``-O``
(or ``PYTHONOPTIMIZE``): ``__debug__`` is then False, and the check is not defined at all.

So ``gitvow proxy`` started without it runs itself again, in the same process (``exec``, the
same pid, environment and file descriptors), with ``-O`` added to the interpreter's own
arguments (:func:`optimised_command`); the environment is left alone, so the programs the
proxy starts are not optimised by it. -O also strips ``assert`` statements: gitvow relies on
none (``tests/hygiene/test_no_assert.py`` scans every distribution's source). A proxy run
another way (``mitmdump -s`` with gitvow's script, or :func:`gitvow_proxy.run.main` called
from Python) works unchanged, with mitmproxy's checks in place: slower, never less safe.
"""

from __future__ import annotations

import os
import sys


def optimised_command() -> list[str] | None:
    """The command line that runs this same ``gitvow proxy`` again under ``python -O``; None
    when this interpreter is already optimised, or when it was not started as ``gitvow proxy``
    (``main`` called from other Python code, a script read from stdin: nothing to run again)."""
    if sys.flags.optimize or not sys.executable:
        return None
    argv, original = sys.argv, sys.orig_argv
    if len(argv) < 2 or argv[1] != "proxy" or argv[0] in ("", "-") or len(original) < len(argv):
        return None
    if original[len(original) - len(argv) + 1:] != argv[1:]:
        return None  # sys.argv was changed after start: the original command is not this one
    return [sys.executable, "-O", *original[1:]]


def run_optimised() -> None:
    """Replace this process with :func:`optimised_command`'s, when there is one; returns only
    when there is none or the ``exec`` failed (then the proxy runs on, unoptimised)."""
    command = optimised_command()
    if command is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"gitvow proxy: could not run under python -O ({exc}); mitmproxy's per-message type checks stay on",
              file=sys.stderr)


__all__ = ["optimised_command", "run_optimised"]
