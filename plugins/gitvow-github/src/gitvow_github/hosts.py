"""Where on a GitHub host a request goes: REST, GraphQL, uploads, or the web host's git and sign-in paths.

``api.github.com`` serves REST at its root and GraphQL at ``/graphql``; ``uploads.github.com``
serves release-asset uploads with the same route shapes; ``github.com`` serves git
smart-HTTP and the OAuth device flow. Any other host mapped to the ``github`` adapter in the
policy's ``[hosts]`` is a GitHub Enterprise Server, which serves everything on one host:
REST under ``/api/v3``, GraphQL at ``/api/graphql``, uploads under ``/api/uploads``, git and
sign-in at the root.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

API_HOST = "api.github.com"
UPLOADS_HOST = "uploads.github.com"
WEB_HOST = "github.com"
DEFAULT_HOSTS: tuple[str, ...] = (API_HOST, WEB_HOST, UPLOADS_HOST)

GHES_REST_PREFIX = "/api/v3"
GHES_GRAPHQL_PATH = "/api/graphql"
GHES_UPLOADS_PREFIX = "/api/uploads"
#: The OAuth device flow's two POSTs (``gh auth login``): ``auth.login``, write-surface exempt.
LOGIN_PATHS = frozenset({"/login/device/code", "/login/oauth/access_token"})


class Surface(Enum):
    REST = "rest"
    GRAPHQL = "graphql"
    WEB = "web"


@dataclass(frozen=True, slots=True)
class Target:
    """The surface a request addresses and its path below that surface's root."""

    surface: Surface
    path: str


def _strip(path: str, prefix: str) -> str | None:
    if path == prefix:
        return "/"
    if path.startswith(prefix + "/"):
        return path[len(prefix) :]
    return None


def route(host: str, path: str) -> Target:
    """Where ``path`` on ``host`` goes."""
    host = host.lower()
    if host in (API_HOST, UPLOADS_HOST):
        if path.rstrip("/") == "/graphql" and host == API_HOST:
            return Target(Surface.GRAPHQL, path)
        return Target(Surface.REST, path)
    if host == WEB_HOST:
        return Target(Surface.WEB, path)
    # GitHub Enterprise Server: one host for everything.
    if path.rstrip("/") == GHES_GRAPHQL_PATH:
        return Target(Surface.GRAPHQL, path)
    for prefix in (GHES_REST_PREFIX, GHES_UPLOADS_PREFIX):
        below = _strip(path, prefix)
        if below is not None:
            if below.rstrip("/") == "/graphql" and prefix == GHES_REST_PREFIX:
                return Target(Surface.GRAPHQL, below)
            return Target(Surface.REST, below)
    return Target(Surface.WEB, path)
