"""A refusal in git's own protocol, so that the git client prints it.

git never prints the body of a failed ``git-receive-pack`` POST: a 403 there is only
``error: RPC failed; HTTP 403``. Forges refuse a push (a protected branch, a hook) inside a
successful answer instead, and so does this (see git's gitprotocol-pack, "Report Status",
and gitprotocol-http, "Smart Service git-receive-pack"):

* ``POST …/git-receive-pack`` whose client asked for ``report-status`` or
  ``report-status-v2`` (the first command line's capabilities, after its NUL): HTTP 200,
  ``application/x-git-receive-pack-result``, ``unpack ok`` then ``ng <ref> <reason>`` for
  **every** ref of the request (never ``ok``: git must not believe anything landed). With
  ``side-band-64k`` (or ``side-band``) the report goes on band 1 and the one-line denial on
  band 2 first, which git prints as ``remote: …``; the ``ng`` reason is short
  (``gitvow: <code>``), so git's ``! [remote rejected] main -> main (gitvow: <code>)``
  stays readable. Without side-band git prints no ``remote:`` lines, so the ``ng`` reason
  is the whole line. Both report formats read ``ng`` the same way, so one report serves both.
* ``GET …/info/refs?service=git-…-pack``: HTTP 200, the service's advertisement type, the
  ``# service=`` header and an ``ERR <line>`` packet, which git 2.39 prints as
  ``fatal: remote error: <line>`` (a 403 there prints the line as ``remote:`` with a
  misleading ``unable to access … 403`` after it).

Anything else — a push whose commands cannot be read, a client that asked for no report, an
upload-pack POST, dumb HTTP — keeps the enforcement point's status with the line as text.
"""

from __future__ import annotations

import zlib
from urllib.parse import parse_qs

from gitvow.refusal import Answer, plain
from gitvow.request import Request
from gitvow_gitsmart.limits import COMMANDS_LIMIT
from gitvow_gitsmart.pktline import PktLineError, read_command_list

RESULT = "application/x-git-receive-pack-result"
_SERVICES = ("git-upload-pack", "git-receive-pack")
#: The largest pkt-line payload (65520 bytes less the length), and the data of one
#: ``side-band-64k`` packet (less the band byte).
_MAX_PAYLOAD = 65516
_BAND_DATA = _MAX_PAYLOAD - 1
_GZIP_WINDOW = 16 + zlib.MAX_WBITS


def pkt(payload: bytes) -> bytes:
    """One pkt-line: four hex digits of length, then the payload."""
    return b"%04x" % (len(payload) + 4) + payload


FLUSH = b"0000"


def one_line(text: str) -> bytes:
    """``text`` as one line of bytes: no line break or NUL git would split or stop at."""
    return " ".join(text.replace("\0", " ").split()).encode("utf-8")


def git_refusal(request: Request, message: str, code: str, *, limit: int = COMMANDS_LIMIT) -> Answer:
    """The refusal of a git smart-HTTP ``request`` as git prints it (see the module docstring);
    ``message`` is the one-line denial, ``code`` its reason code."""
    path = request.path
    if request.method in ("GET", "HEAD") and path.endswith("/info/refs"):
        service = _service(request.query)
        if service is not None:
            return Answer(f"application/x-{service}-advertisement", advertisement_error(service, message), 200)
    elif request.method == "POST" and path.endswith("/git-receive-pack"):
        report = push_refusal(request, message, code, limit=limit)
        if report is not None:
            return Answer(RESULT, report, 200)
    return Answer(*plain(message))


def _service(query: str) -> str | None:
    services = parse_qs(query).get("service", [])
    return services[0] if len(services) == 1 and services[0] in _SERVICES else None


def advertisement_error(service: str, message: str) -> bytes:
    """A ref advertisement that is git's ``ERR`` packet: ``fatal: remote error: <message>``."""
    return pkt(f"# service={service}\n".encode()) + FLUSH + pkt(b"ERR " + one_line(message)[: _MAX_PAYLOAD - 5] + b"\n")


def push_refusal(request: Request, message: str, code: str, *, limit: int = COMMANDS_LIMIT) -> bytes | None:
    """The receive-pack answer refusing every ref of the push, or None when the client asked
    for no report (it could not tell the push failed) or its commands cannot be read."""
    try:
        refs, capabilities = read_command_list(_commands(request.body, request.header("content-encoding"), limit),
                                               limit=limit)
    except PktLineError:
        return None
    caps = capabilities.split()
    if not refs or not ({b"report-status", b"report-status-v2"} & set(caps)):
        return None
    banded = b"side-band-64k" in caps
    line = one_line(message)
    reason = b"gitvow: " + one_line(code) if banded else line
    report = pkt(b"unpack ok\n")
    for ref in refs:
        head = b"ng " + ref.ref.encode() + b" "
        report += pkt(head + reason[: _MAX_PAYLOAD - len(head) - 1] + b"\n")
    report += FLUSH
    if not banded:
        return report
    return _banded(2, line + b"\n") + _banded(1, report) + FLUSH


def _banded(band: int, data: bytes) -> bytes:
    """``data`` on side-band ``band``, in as many packets as it takes."""
    return b"".join(pkt(bytes((band,)) + data[i : i + _BAND_DATA]) for i in range(0, len(data), _BAND_DATA))


def _commands(body: bytes, encoding: str, limit: int) -> bytes:
    """The start of the request body, gunzipped if it says so: no more than the commands need."""
    if encoding.lower() != "gzip":
        return body
    try:
        return zlib.decompressobj(_GZIP_WINDOW).decompress(body, limit + 4)
    except zlib.error:
        raise PktLineError("gzip body does not inflate") from None


__all__ = ["RESULT", "advertisement_error", "git_refusal", "push_refusal"]
