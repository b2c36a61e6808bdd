"""Reading the issues a request creates, for adapters: the fields the forge reads, and no others.

``[issue_shape]`` judges the title and body an agent gives an issue. Searching the whole body
for any ``title`` key lets a request carry a decoy (``{"title": "t", "x": {"title": "ok"}}``)
or create several issues and show one. So each adapter names the exact fields its forge
reads and reports one :class:`~gitvow.request.IssueDraft` per issue created; these helpers
do the reading.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitvow.request import IssueDraft, Request

#: Bodies larger than this are not read for drafts (the issue is then unreadable: refused).
DRAFT_READ_LIMIT = 1024 * 1024


def _text(value: Any) -> str | None:
    # GitHub accepts a number as a title and shows it as text; anything else is not a title.
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) else None


def draft_from_mapping(data: object, *, title: str = "title", body: str = "body",
                       unread: tuple[str, ...] = ()) -> IssueDraft | None:
    """The draft held by ``data[title]`` / ``data[body]`` (top level only), or None when
    ``data`` is not an object or sets a key in ``unread`` — another field the forge may take the
    body from, which the draft would not show."""
    if not isinstance(data, Mapping):
        return None
    if any(key in data for key in unread):
        return None
    return IssueDraft(_text(data.get(title)), _text(data.get(body)))


def json_object(request: Request, *, limit: int = DRAFT_READ_LIMIT) -> dict[str, Any] | None:
    """The request body as a JSON object, or None (compressed, too large, not JSON, not an object)."""
    if request.header("content-encoding").strip().lower() not in ("", "identity"):
        return None
    if len(request.body) > limit:
        return None
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nesting deeper than the parser's stack
        return None
    return data if isinstance(data, dict) else None


def draft_from_json(request: Request, *, title: str = "title", body: str = "body") -> IssueDraft | None:
    """The draft of a REST request whose JSON object body names the issue at its top level."""
    return draft_from_mapping(json_object(request), title=title, body=body)


__all__ = ["DRAFT_READ_LIMIT", "draft_from_json", "draft_from_mapping", "json_object"]
