"""Which repository a call is about, and a file's path relative to it.

Kept apart from :mod:`~gitvow_gate.providers` because every edit needs it (path rules match
the repo-relative spelling too) while only policies with providers need the rest.
"""

from __future__ import annotations

import os

from gitvow_gate.call import GateCall
from gitvow_gate.gate_policy import find_repo_root

__all__ = ["relative", "repo_of"]


def relative(path: str, repo: str) -> str:
    """``path`` relative to the repository when it lies inside it, else as given."""
    if path and os.path.isabs(path):
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(repo))
        return path if rel.startswith("..") else rel
    return path


def repo_of(call: GateCall) -> str:
    """The repository a call is about: the top level above its first file, else above its cwd."""
    start = call.cwd or os.getcwd()
    if call.edits:
        first = call.edits[0].path
        full = first if os.path.isabs(first) else os.path.join(start, first)
        directory = os.path.dirname(full)
        while directory and not os.path.isdir(directory):
            parent = os.path.dirname(directory)
            directory = "" if parent == directory else parent
        if directory:
            start = directory
    return find_repo_root(start) or os.path.abspath(call.cwd or os.getcwd())
