"""Linear's default limits, shared by the adapter and its options model (no imports)."""

from __future__ import annotations

#: The legacy gate's ceilings (``linearBodyLimit``, ``linearMaxOperations``).
BODY_LIMIT = 32 * 1024
FIELD_LIMIT = 32
