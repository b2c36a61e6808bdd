"""Verb overrides: what turns a ``POST`` into another method behind the classifier's back.

Rack's ``MethodOverride`` (GitLab, Bitbucket Data Center's front ends), Express' and many
proxies honour an ``X-HTTP-Method-Override`` header or a ``_method`` parameter: a ``POST``
the adapter read as one route runs as a ``DELETE`` of it. An adapter cannot know which front
end sits before its forge, so it refuses both on every write (:func:`method_override` says
why; the adapter returns ``Classification.unknown`` with that note). Dependency-free.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from gitvow.request import Request

#: Headers Rack::MethodOverride and other front ends honour to turn a POST into another verb.
OVERRIDE_HEADERS = ("x-http-method-override", "x-http-method", "x-method-override")
#: Bodies larger than this are not read for a ``_method`` key: one that might carry it is refused.
BODY_READ_LIMIT = 256 * 1024


def _base_key(key: str) -> str:
    return key.split("[", 1)[0]


def _body_keys(request: Request) -> frozenset[str] | None:
    """Top-level keys of a form or JSON-object body; None when it cannot be read as a front end would."""
    body = request.body
    if len(body) > BODY_READ_LIMIT or request.header("content-encoding").strip().lower() not in ("", "identity"):
        return None
    content_type = request.header("content-type").split(";", 1)[0].strip().lower()
    if content_type.startswith("multipart/"):
        return None
    try:
        text = body.decode("utf-8")
        if content_type == "application/x-www-form-urlencoded":
            return frozenset(_base_key(k) for k, _ in parse_qsl(text, keep_blank_values=True))
        payload = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return frozenset(_base_key(str(k)) for k in payload) if isinstance(payload, dict) else frozenset()


def method_override(request: Request) -> str | None:
    """Why the request's verb cannot be trusted, or None: an override header, or ``_method``
    in the query or the body (a body that mentions ``method`` and cannot be read counts)."""
    for name in OVERRIDE_HEADERS:
        if name in request.headers:
            return f"the {name} header is not allowed"
    # Cheap substring tests first; "method" also catches %5Fmethod and a JSON "\u005fmethod".
    if "method" in request.query.lower():
        keys = {_base_key(k) for k, _ in parse_qsl(request.query, keep_blank_values=True)}
        if "_method" in keys:
            return "a _method parameter is not allowed"
    if b"method" in request.body.lower():
        body_keys = _body_keys(request)
        if body_keys is None or "_method" in body_keys:
            return "a _method parameter is not allowed"
    return None


__all__ = ["OVERRIDE_HEADERS", "method_override"]
