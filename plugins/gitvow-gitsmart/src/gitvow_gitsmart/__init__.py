"""git smart-HTTP for gitvow: ``classify_git`` is what every forge adapter delegates to."""

from __future__ import annotations

from gitvow_gitsmart.classify import classify_git, is_git_path
from gitvow_gitsmart.pktline import PktLineError, read_ref_updates

__all__ = ["PktLineError", "classify_git", "is_git_path", "read_ref_updates"]
