"""gitvow: one policy for what an AI coding agent may do to the systems it can change.

The import is deliberately empty: the agent hook runs on every tool call, so nothing
heavy (pydantic, mitmproxy, graphql-core) may load merely because ``gitvow`` was imported.
"""

from __future__ import annotations

__version__ = "1.0.0"
