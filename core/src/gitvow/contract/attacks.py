"""Requests the contract kit derives from an adapter's own fixtures to attack it.

Counting fixtures proves an adapter knows its examples; these prove it holds up around them:
the same route respelled (:func:`variants`), its own routes sent bodies it did not expect
(:func:`bad_bodies`), the repository a path sits under (:func:`repository_prefix`), and the
forge's answers to ``resolve`` coming from a loopback stand-in that says nothing useful
(:func:`loopback_fetch`). Every request goes through the core's canonical path first, as the
pipeline sends it (:func:`through_core`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gitvow.paths import PathRefused, canonical_path, split_path
from gitvow.request import Fixture, Request
from gitvow.targets import Fetch

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_UNRESERVED_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a forge exposes, for the kit's completeness check (the shipped adapters derive theirs).

    ``routes`` are ``(METHOD, url)`` with the forge's templates left in (``{owner}``,
    ``:id``); ``reasons`` maps a ``(METHOD, url)`` of ``routes`` to why it has no fixture
    (refused on purpose, covered by another route's fixture…). ``sample`` fills a
    template's parameters (default: ``name-1``).
    """

    routes: Sequence[tuple[str, str]]
    reasons: Mapping[tuple[str, str], str] = field(default_factory=dict)
    sample: Mapping[str, str] = field(default_factory=dict)


def through_core(request: Request, *, encoded_slash: bool) -> Request | None:
    """``request`` as the pipeline hands it to ``classify`` (canonical path), or None if refused."""
    try:
        path = canonical_path(request.path, encoded_slash=encoded_slash)
    except PathRefused:
        return None
    return request if path == request.path else replace(request, path=path)


def _encode_first(segment: str) -> str:
    for i, char in enumerate(segment):
        if char in _UNRESERVED_ALNUM:
            return f"{segment[:i]}%{ord(char):02x}{segment[i + 1:]}"
    return segment


def variants(request: Request) -> Iterator[tuple[str, Request]]:
    """The same request respelled as a front end would still route it: each segment's first
    letter percent-encoded, the path upper-cased (forges such as GitHub route case-blind), a
    trailing slash, a ``.`` segment. Each must classify as the original does, or be refused."""
    path = request.path
    if not path.startswith("/") or path == "/":
        return
    segments = path[1:].split("/")
    encoded = "/" + "/".join(s if "%" in s else _encode_first(s) for s in segments)
    if encoded != path:
        yield "encoded", replace(request, path=encoded)
    if path.upper() != path:
        yield "upper-case", replace(request, path=path.upper())
    if not path.endswith("/"):
        yield "trailing slash", replace(request, path=path + "/")
    head, _, tail = path.rpartition("/")
    yield "dot segment", replace(request, path=f"{head}/./{tail}")


def _retyped(payload: object) -> Iterator[tuple[str, bytes]]:
    if not isinstance(payload, dict):
        return
    for wrong_name, wrong in (("a list", ["x", 1]), ("a number", 7), ("null", None), ("an object", {"x": [1]})):
        yield f"every field {wrong_name}", json.dumps({key: wrong for key in payload}).encode()


#: Bodies no forge client sends. The unreadable ones must come back unknown or as what the route
#: is; the readable ones (``READABLE``) may change what a body-dependent route does, but never raise.
READABLE = frozenset({"wrong types", "a form"})
MALFORMED: tuple[tuple[str, bytes], ...] = (
    ("truncated JSON", b'{"title": "x", "body": '),
    ("not UTF-8", b"\xff\xfe\x00\x81garbage"),
    ("a JSON array", b"[1, 2, 3]"),
    ("JSON null", b"null"),
    ("a JSON string", b'"merge"'),
    ("deeply nested JSON", b"[" * 100_000 + b"]" * 100_000),
    ("wrong types", json.dumps({"title": 5, "body": {"x": 1}, "content": [1], "query": 7, "variables": "x",
                                "name": None, "state": 9, "operationName": 3}).encode()),
    ("over the size limit", b'{"title": "' + b"x" * (4 * 1024 * 1024) + b'"}'),
    ("a form", b"title=x&body=%ff%fe&_x[]=1"),
)


def bad_bodies(fixture: Fixture) -> Iterator[tuple[str, Request, bool]]:
    """The fixture's request with each malformed body, and its own JSON body wrongly typed;
    the flag says whether the result must be unknown or (at least) the fixture's operations."""
    request = fixture.request()
    headers = dict(request.headers) or {"content-type": "application/json"}
    for label, body in MALFORMED:
        yield label, replace(request, body=body, headers=headers), label not in READABLE
    try:
        payload = json.loads(fixture.body) if fixture.body else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        payload = None
    for label, body in _retyped(payload):
        yield label, replace(request, body=body, headers=headers), True


def repository_prefix(request: Request, repo: str) -> tuple[str, ...] | None:
    """The path segments up to and including where ``repo`` is written in ``request``'s path
    (``/2.0/repositories/team/app/pullrequests`` and ``team/app`` → ``2.0/repositories/team/app``),
    or None if the path does not spell it (an id, a GraphQL body)."""
    try:
        segments = split_path(request.path)
    except PathRefused:
        return None
    wanted = repo.lower()
    lowered = [s.lower() for s in segments]
    for start in range(len(lowered)):
        for end in range(start + 1, len(lowered) + 1):
            joined = "/".join(lowered[start:end])
            if joined.removesuffix(".git") == wanted:
                return tuple(lowered[:end])
            if len(joined) >= len(wanted) + 4:
                break
    return None


def under(request: Request, prefix: Sequence[str]) -> bool:
    try:
        segments = [s.lower() for s in split_path(request.path)]
    except PathRefused:
        return False
    return len(segments) > len(prefix) and tuple(segments[: len(prefix)]) == tuple(prefix)


def loopback_fetch(port: int, headers: Mapping[str, str]) -> Fetch:
    """``fetch`` as the proxy gives it to ``resolve``, aimed at a loopback stand-in on ``port``."""

    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        if not path.startswith("/"):
            raise ValueError(f"resolve asked for {path!r}, not a path on the forge's host")
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body or None, method=method,
                                         headers=dict(headers))
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    return fetch
