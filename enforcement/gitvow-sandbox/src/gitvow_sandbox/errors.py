"""The one exception type of ``gitvow run``: a sandbox that cannot be set up, with what to do."""

from __future__ import annotations

from gitvow.errors import GitvowError


class SandboxError(GitvowError):
    """The sandbox cannot be set up; the command was not run. The message says how to fix it."""
