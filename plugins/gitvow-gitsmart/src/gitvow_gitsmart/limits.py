"""How much of a push the adapter reads, by default: its own module, so the adapter (which the
agent gate loads for a ``git`` command) sets them without importing the pack reader."""

from __future__ import annotations

#: Bytes of ref-update commands read at the start of a receive-pack body.
COMMANDS_LIMIT = 64 * 1024
#: Bytes of pack read after them.
PACK_LIMIT = 256 * 1024 * 1024

__all__ = ["COMMANDS_LIMIT", "PACK_LIMIT"]
