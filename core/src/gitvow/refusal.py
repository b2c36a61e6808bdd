"""Refusal bodies in the shapes forge clients print, for :meth:`gitvow.adapter.Adapter.refusal_body`.

A client shows its user what it finds in an error body: ``gh``, PyGithub and octokit a JSON
``message`` (REST) or the ``errors`` of a GraphQL answer; python-gitlab ``message``; the
Linear SDK its GraphQL ``errors``; git its own protocol (see :class:`Answer`). Each
helper carries the one-line denial unchanged (nothing else: never a header or a body of the
request), plus the reason code where the format has a place for it.

A protocol whose client prints only what arrives in a successful answer (git's push reads a
``report-status``, never the body of a failed POST) answers with an :class:`Answer` that
sets its own status (:meth:`gitvow.adapter.Adapter.refusal_answer`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

PLAIN = "text/plain; charset=utf-8"
JSON = "application/json; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Answer:
    """A refusal as the client's protocol carries it.

    ``status`` None keeps the enforcement point's own (403 for a refusal, 429 with
    ``Retry-After`` for a throttle, 503 when the state store is unreachable). A protocol that
    tells a refusal inside a successful answer sets it (git smart-HTTP: 200 with a
    ``report-status`` whose every ref is ``ng``); such a body must never read as a success to
    its client. The reason header is set whatever the status."""

    content_type: str
    body: bytes
    status: int | None = None


def plain(message: str) -> tuple[str, bytes]:
    """The line as text: git prints it as ``remote: …`` for a failed ``info/refs``, never for
    a failed POST (its push answer is ``gitvow_gitsmart.git_refusal``'s)."""
    return PLAIN, (message + "\n").encode()


def json_message(message: str, code: str, **extra: Any) -> tuple[str, bytes]:
    """``{"message": …}``: GitHub, GitLab and Gitea REST errors."""
    return JSON, json.dumps({"message": message, **extra, "gitvow_reason": code}).encode()


def graphql_errors(message: str, code: str, **extensions: Any) -> tuple[str, bytes]:
    """``{"errors": [{"message": …}]}``, the GraphQL error shape, with the code in ``extensions``."""
    error = {"message": message, "extensions": {"code": "FORBIDDEN", "gitvow_reason": code, **extensions}}
    return JSON, json.dumps({"data": None, "errors": [error]}).encode()


#: Placeholders :func:`json_shaped` fills in a forge's own error template.
MESSAGE = "{message}"
CODE = "{code}"


def json_shaped(message: str, code: str, template: Any) -> tuple[str, bytes]:
    """The line in a forge's own JSON error shape: ``template`` is that shape, any string of
    it equal to :data:`MESSAGE` (``"{message}"``) becomes the line and :data:`CODE` the code.

    Bitbucket Cloud: ``json_shaped(line, code, {"type": "error", "error": {"message": MESSAGE}})``;
    Bitbucket Data Center: ``{"errors": [{"message": MESSAGE, "exceptionName": None}]}``.
    A template without :data:`MESSAGE` is a mistake (the client would print nothing useful):
    ``ValueError``. Where the top level is an object, ``gitvow_reason`` is added to it.
    """
    found = False

    def fill(value: Any) -> Any:
        nonlocal found
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [fill(item) for item in value]
        if value == MESSAGE:
            found = True
            return message
        return code if value == CODE else value

    body = fill(template)
    if not found:
        raise ValueError("the refusal template has no MESSAGE placeholder")
    if isinstance(body, dict):
        body.setdefault("gitvow_reason", code)
    return JSON, json.dumps(body).encode()


__all__ = ["CODE", "JSON", "MESSAGE", "PLAIN", "Answer", "graphql_errors", "json_message", "json_shaped", "plain"]
