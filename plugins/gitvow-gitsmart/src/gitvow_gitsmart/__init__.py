"""git smart-HTTP for gitvow: ``classify_git`` and ``git_refusal`` are what every forge adapter
delegates its git paths to.

The names are imported on first use (the agent gate imports this package for the adapter's
``git`` command reader, which needs none of the wire reader's modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitvow_gitsmart.classify import classify_git as classify_git
    from gitvow_gitsmart.classify import is_git_path as is_git_path
    from gitvow_gitsmart.pktline import PktLineError as PktLineError
    from gitvow_gitsmart.pktline import read_ref_updates as read_ref_updates
    from gitvow_gitsmart.refusals import git_refusal as git_refusal

_LAZY = {"classify_git": "gitvow_gitsmart.classify", "is_git_path": "gitvow_gitsmart.classify",
         "git_refusal": "gitvow_gitsmart.refusals",
         "PktLineError": "gitvow_gitsmart.pktline", "read_ref_updates": "gitvow_gitsmart.pktline"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["PktLineError", "classify_git", "git_refusal", "is_git_path", "read_ref_updates"]
