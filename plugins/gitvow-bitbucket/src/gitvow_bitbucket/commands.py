"""``curl`` to Bitbucket Cloud, read at the agent gate.

There is no official Bitbucket command-line client (Atlassian ships none, and no ``bb`` is
packaged here), so an agent reaches Bitbucket with ``curl`` (or git). A ``curl`` whose URL is
on ``api.bitbucket.org`` or ``bitbucket.org`` is turned into the request it sends (method from
``-X``, ``-d``/``--json``/``-F``/``-T``, ``-I``, ``-G``) and classified by the adapter
itself, through the core's canonical path, exactly as the proxy would. A ``curl`` the gate
cannot read fully (``-K`` config files, an option it does not know that takes a value) to a
Bitbucket URL is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gitvow.paths import PathRefused, canonical_path
from gitvow.request import Request, ToolCall
from gitvow.vocabulary import UNKNOWN

if TYPE_CHECKING:
    from gitvow.adapter import Adapter

HOSTS = frozenset({"api.bitbucket.org", "bitbucket.org"})
_DATA = frozenset({"-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json",
                   "-F", "--form", "--form-string"})
_VALUED = frozenset({"-H", "--header", "-u", "--user", "-o", "--output", "-A", "--user-agent", "-e", "--referer",
                     "-b", "--cookie", "-c", "--cookie-jar", "-w", "--write-out", "-m", "--max-time",
                     "--connect-timeout", "-x", "--proxy", "--cacert", "--cert", "--key", "--retry", "-r", "--range",
                     "--oauth2-bearer", "--resolve", "--connect-to", "-U", "--proxy-user", "--limit-rate"})
_OPAQUE = frozenset({"-K", "--config"})


class _Curl:
    def __init__(self) -> None:
        self.method = ""
        self.urls: list[str] = []
        self.data = False
        self.get = False
        self.head = False
        self.upload = False
        self.opaque = False


def _option(state: _Curl, arg: str, value: str | None) -> None:
    if arg in ("-X", "--request"):
        state.method = (value or "").upper()
    elif arg == "--url":
        state.urls.append(value or "")
    elif arg in _DATA:
        state.data = True
    elif arg in ("-T", "--upload-file"):
        state.upload = True
    elif arg in _OPAQUE:
        state.opaque = True


#: Short options that take a value (``-XPOST``, ``-sX POST``, ``-d@file``).
_SHORT_VALUED = frozenset("XdHuoAebcwmxrTFKUE")
_SHORT_NAMES = {"X": "-X", "d": "-d", "F": "-F", "T": "-T", "K": "-K"}


def _short(state: _Curl, arg: str, following: str | None) -> bool:
    """A cluster of short options (``-sSX``); returns whether it took ``following`` as a value."""
    for i, flag in enumerate(arg[1:], start=1):
        if flag == "I":
            state.head = True
        elif flag == "G":
            state.get = True
        elif flag in _SHORT_VALUED:
            rest = arg[i + 1 :]
            _option(state, _SHORT_NAMES.get(flag, "-" + flag), rest or following)
            return not rest
    return False


def _parse(args: Sequence[str]) -> _Curl:
    state = _Curl()
    i = 0
    while i < len(args):
        arg = args[i]
        following = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if arg == "--":
            state.urls.extend(args[i:])
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in ("--head",):
                state.head = True
            elif name == "--get":
                state.get = True
            elif eq:
                _option(state, name, value)
            elif name in _DATA or name in _VALUED or name in _OPAQUE or name in ("--request", "--url", "--upload-file"):
                _option(state, name, following)
                i += 1
        elif arg.startswith("-") and len(arg) > 1:
            if _short(state, arg, following):
                i += 1
        else:
            state.urls.append(arg)
    return state


def _method(state: _Curl) -> str:
    if state.method:
        return state.method
    if state.head:
        return "HEAD"
    if state.get:
        return "GET"
    if state.upload:
        return "PUT"
    return "POST" if state.data else "GET"


def classify_curl(adapter: Adapter, argv: Sequence[str]) -> ToolCall | None:
    """The operations a ``curl`` to Bitbucket Cloud performs, or None if it goes elsewhere."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "curl":
        return None
    state = _parse(argv[1:])
    ours = []
    for url in state.urls:
        full = url if "://" in url else f"https://{url}"
        try:
            parts = urlsplit(full)
            host = (parts.hostname or "").lower()
        except ValueError:
            continue
        if host in HOSTS:
            ours.append((full, parts))
    if not ours:
        return None
    method = _method(state)
    operations: list[str] = []
    repo: str | None = None
    for full, parts in ours:
        if state.opaque:
            operations.append(UNKNOWN)
            continue
        try:
            path = canonical_path(parts.path or "/", encoded_slash=adapter.encoded_slash)
            request = Request.from_url(method, full)
            request = Request(request.method, request.host, path, request.query, port=request.port,
                              scheme=request.scheme)
            got = adapter.classify(request)
        except (PathRefused, ValueError):
            operations.append(UNKNOWN)
            continue
        operations.extend(op for op in got.operations if op not in operations)
        repo = repo or got.repo
    return ToolCall(tuple(dict.fromkeys(operations)), repo=repo, adapter=adapter.name,
                    summary=f"curl {method} {ours[0][0][:100]}")
