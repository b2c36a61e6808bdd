"""Refusal bodies in the shapes forge clients print, for :meth:`gitvow.adapter.Adapter.refusal_body`.

A client shows its user what it finds in an error body: ``gh``, PyGithub and octokit a JSON
``message`` (REST) or the ``errors`` of a GraphQL answer; python-gitlab ``message``; the
Linear SDK its GraphQL ``errors``; git a ``text/plain`` body as ``remote:`` lines. Each
helper carries the one-line denial unchanged (nothing else: never a header or a body of the
request), plus the reason code where the format has a place for it.
"""

from __future__ import annotations

import json
from typing import Any

PLAIN = "text/plain; charset=utf-8"
JSON = "application/json; charset=utf-8"


def plain(message: str) -> tuple[str, bytes]:
    """The line as text: git prints it as ``remote: …``."""
    return PLAIN, (message + "\n").encode()


def json_message(message: str, code: str, **extra: Any) -> tuple[str, bytes]:
    """``{"message": …}``: GitHub, GitLab and Gitea REST errors."""
    return JSON, json.dumps({"message": message, **extra, "gitvow_reason": code}).encode()


def graphql_errors(message: str, code: str, **extensions: Any) -> tuple[str, bytes]:
    """``{"errors": [{"message": …}]}``, the GraphQL error shape, with the code in ``extensions``."""
    error = {"message": message, "extensions": {"code": "FORBIDDEN", "gitvow_reason": code, **extensions}}
    return JSON, json.dumps({"data": None, "errors": [error]}).encode()


__all__ = ["JSON", "PLAIN", "graphql_errors", "json_message", "plain"]
