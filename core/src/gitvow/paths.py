"""Splitting a REST path into segments, strictly: the one splitter every forge adapter uses.

A front end (nginx, Rails, Go's mux) normalises a path before it routes it: it collapses
``//``, resolves ``.`` and ``..`` and, for some, decodes ``%2e``. A classifier that routed
the path as sent would then judge one route while the forge ran another. So a path whose
segments a front end would rewrite is refused (:class:`PathRefused`), and the caller turns
that into ``unknown``, denied.

Each segment is percent-decoded *after* splitting, so an encoded slash stays inside its
segment (GitLab's ``/projects/group%2Fproject``, Gitea's ``a%2Fb`` branch names) and an
encoded dot segment (``%2e%2e``) is refused like a plain one. Dependency-free: the agent
hook imports it on its forge stage.
"""

from __future__ import annotations

from urllib.parse import unquote


class PathRefused(ValueError):
    """A path whose segments a front end would rewrite before routing."""


def split_path(path: str) -> list[str]:
    """``/api/v4/projects/g%2Fp/issues`` → ``["api", "v4", "projects", "g/p", "issues"]``.

    One leading and one trailing slash are dropped; an empty segment anywhere else, or a
    segment that is (or decodes to) ``.`` or ``..``, raises :class:`PathRefused`.
    """
    if "%" not in path and "//" not in path and "/." not in path and not path.startswith("."):
        # The common case, checked in one pass: without "//" there is at most one slash to
        # strip at each end, no empty segment, and no segment can start with a dot.
        body = path.strip("/")
        return body.split("/") if body else []
    raw = path.split("/")
    if raw and raw[0] == "":
        raw = raw[1:]
    if raw and raw[-1] == "":
        raw = raw[:-1]
    segments: list[str] = []
    for part in raw:
        if not part:
            raise PathRefused("empty path segment")
        if "%" in part:
            # Encoded slashes are by far the commonest escape (project paths): skip unquote for them.
            plain = part.replace("%2F", "/").replace("%2f", "/")
            segment = plain if "%" not in plain else unquote(part)
        else:
            segment = part
        if segment in (".", ".."):
            raise PathRefused("dot segment in the path")
        segments.append(segment)
    return segments
