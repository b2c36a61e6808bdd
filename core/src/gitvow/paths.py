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

One rule makes the path an adapter reads canonical (:func:`canonical_path`, applied by the
pipeline before any adapter sees a request): percent-encodings of *unreserved* characters
(``A-Z a-z 0-9 - . _ ~``) are decoded, as RFC 3986 section 6.2.2.2 says every server treats
them, and the hex digits of every other escape are upper-cased. So ``te%61m`` reaches the
adapter as ``team``: an adapter matching the raw path cannot name another repository than
the forge will act on, and no repository gate can be dodged by spelling a name differently.
"""

from __future__ import annotations

import re


def _unquote(part: str) -> str:
    from urllib.parse import unquote  # urllib.parse (and ipaddress) cost the agent hook's forge path

    return unquote(part)


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
            segment = plain if "%" not in plain else _unquote(part)
        else:
            segment = part
        if segment in (".", ".."):
            raise PathRefused("dot segment in the path")
        segments.append(segment)
    return segments


#: The reason code of a request refused because its path is not canonical.
PATH_NOT_CANONICAL = "path_not_canonical"


def path_problem(path: str, *, encoded_slash: bool = False) -> str | None:
    """Why a front end could route ``path`` elsewhere than it reads, or None if it cannot.

    The one check the pipeline applies to every request before any adapter reads it: an
    empty segment (``//``, which nginx and Gitea merge), a ``.`` or ``..`` segment, plain or
    percent-encoded (``%2e%2e``), and — unless the forge keeps it inside one segment
    (``encoded_slash``: GitLab's ``group%2Fproject``, Gitea's ``feature%2Fx``) — a
    percent-encoded slash, which GitHub and plain git hosts treat as a separator. One
    leading and one trailing slash are not segments. A dot *inside* a segment, encoded or
    not (GitLab's documented ``lib%2Fclass%2Erb``), is harmless and passes.
    """
    if "%" not in path and "//" not in path and "/." not in path and not path.startswith("."):
        return None
    raw = path.split("/")
    if raw and raw[0] == "":
        raw = raw[1:]
    if raw and raw[-1] == "":
        raw = raw[:-1]
    for part in raw:
        if not part:
            return "empty path segment"
        if "%" in part:
            # Only "." and "%2e" can make a dot segment, so no full unquote is needed (it
            # costs more than the rest of the check).
            lowered = part.lower()
            if "%2f" in lowered:
                if not encoded_slash:
                    return "percent-encoded slash in the path"
                # Where an encoded slash stays in its segment, what it joins is a path too
                # (GitLab resolves ``group%2F..%2Fother`` as a project path): check its pieces.
                pieces = lowered.split("%2f")
            else:
                pieces = [lowered]
            for piece in pieces:
                if not piece:
                    return "empty path segment"
                if piece.replace("%2e", ".") in (".", ".."):
                    return "dot segment in the path"
        elif part in (".", ".."):
            return "dot segment in the path"
    return None


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def decode_unreserved(path: str) -> str:
    """``/repos/te%61m/app%2fx`` → ``/repos/team/app%2Fx``: unreserved characters decoded, other
    escapes kept with upper-case hex digits. Malformed escapes (``%zz``) are left as sent."""
    return _ESCAPE.sub(_unescape_unreserved, path) if "%" in path else path


def canonical_path(path: str, *, encoded_slash: bool = False) -> str:
    """The path as every adapter reads it: :func:`decode_unreserved`, then held to
    :func:`path_problem` (an encoded dot segment is then a plain one). Raises
    :class:`PathRefused` naming the problem for a path a front end would route elsewhere.

    The one rule of the pipeline's stage 1 (``path_not_canonical``) and of the contract kit.
    """
    if "%" in path:
        path = _ESCAPE.sub(_unescape_unreserved, path)
    problem = path_problem(path, encoded_slash=encoded_slash)
    if problem is not None:
        raise PathRefused(problem)
    return path
