"""Reading the ref-update commands at the start of a receive-pack request body.

The body is ``<pkt-line>* 0000 [push-cert] <packfile>``; each command pkt-line is
``<old-oid> SP <new-oid> SP <ref>`` with the capability list after a NUL on the first.
The commands are read here, never more than ``limit`` bytes of them; the pack after
them is :mod:`gitvow_gitsmart.pack`'s.
"""

from __future__ import annotations

import re

from gitvow.request import RefUpdate
from gitvow_gitsmart.limits import COMMANDS_LIMIT as COMMANDS_LIMIT

_OID = re.compile(rb"^[0-9a-f]{40}([0-9a-f]{24})?$")


_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def ref_name_problem(ref: str) -> str:
    """Why ``ref`` is not a name ``git check-ref-format`` accepts under ``refs/``, or ``""``.

    A forge's receive-pack refuses such names, but one that normalises them instead
    (``refs/heads//main`` or ``refs/heads/main/`` read as ``main``) would write a branch the
    rules judged under another name: the proxy refuses them before any rule reads them."""
    if not ref.startswith("refs/") or ref.count("/") < 2:
        return "is not a full ref name under refs/ (HEAD and bare names are not pushed to)"
    if _REF_FORBIDDEN.search(ref):
        return "holds a character sequence git forbids in ref names"
    if ref.endswith(("/", ".")) or ref == "@":
        return "ends with / or ."
    if any(part.startswith(".") or part.endswith(".lock") for part in ref.split("/")):
        return "has a component starting with . or ending with .lock"
    return ""


class PktLineError(ValueError):
    """The commands could not be read: malformed, truncated or over the limit."""


def read_ref_updates(body: bytes, *, limit: int = COMMANDS_LIMIT) -> tuple[RefUpdate, ...]:
    """The ref updates a push asks for, in order."""
    return read_commands(body, limit=limit)[0]


def read_commands(body: bytes | memoryview, *, limit: int = COMMANDS_LIMIT) -> tuple[tuple[RefUpdate, ...], int]:
    """The ref updates a push asks for, and where the pack starts (after the flush packet)."""
    updates, _, start = read_push_request(body, limit=limit)
    return updates, start


def read_command_list(body: bytes | memoryview, *,
                      limit: int = COMMANDS_LIMIT) -> tuple[tuple[RefUpdate, ...], bytes]:
    """The ref updates and the capabilities the client asked for (the first command's, after
    its NUL, space-separated): what a report of the push must answer, and in which format."""
    updates, caps, _ = _read_updates(body, limit)
    return updates, caps


def read_push_request(body: bytes | memoryview, *,
                      limit: int = COMMANDS_LIMIT) -> tuple[tuple[RefUpdate, ...], tuple[str, ...], int]:
    """The ref updates, the push options (``git push -o``: sent after the commands, up to a
    second flush, when the first command's capabilities name ``push-options``) and where the
    pack starts."""
    updates, caps, pos = _read_updates(body, limit)
    if b"push-options" not in caps.split():
        return updates, (), pos
    options: list[str] = []
    end = len(body)
    while True:
        if pos + 4 > end:
            raise PktLineError("truncated in the push options")
        if pos > limit:
            raise PktLineError(f"push options exceed {limit} bytes")
        try:
            size = int(bytes(body[pos : pos + 4]), 16)
        except ValueError:
            raise PktLineError("bad pkt-line length") from None
        if size == 0:
            return updates, tuple(options), pos + 4
        if size < 4 or pos + size > end:
            raise PktLineError("bad pkt-line length")
        try:
            options.append(bytes(body[pos + 4 : pos + size]).rstrip(b"\n").decode("utf-8"))
        except UnicodeDecodeError:
            raise PktLineError("push option is not UTF-8") from None
        pos += size


def _read_updates(body: bytes | memoryview, limit: int) -> tuple[tuple[RefUpdate, ...], bytes, int]:
    """The ref-update commands, the first one's capability list, and the position after the flush."""
    updates: list[RefUpdate] = []
    caps = b""
    pos = 0
    end = len(body)
    while True:
        if pos + 4 > end:
            raise PktLineError("truncated before the flush packet")
        if pos > limit:
            raise PktLineError(f"ref-update commands exceed {limit} bytes")
        try:
            size = int(bytes(body[pos : pos + 4]), 16)
        except ValueError:
            raise PktLineError("bad pkt-line length") from None
        if size == 0:
            return tuple(updates), caps, pos + 4
        if size < 4 or pos + size > end:
            raise PktLineError("bad pkt-line length")
        payload = bytes(body[pos + 4 : pos + size])
        pos += size
        if payload.startswith(b"shallow "):
            continue
        line, _, capabilities = payload.rstrip(b"\n").partition(b"\0")
        if not updates:
            caps = capabilities
        parts = line.split(b" ", 2)
        if len(parts) != 3 or not _OID.match(parts[0]) or not _OID.match(parts[1]) or not parts[2]:
            raise PktLineError("not a ref-update command")
        try:
            ref = parts[2].decode("utf-8")
        except UnicodeDecodeError:
            raise PktLineError("ref name is not UTF-8") from None
        problem = ref_name_problem(ref)
        if problem:
            raise PktLineError(f"ref {ref!r} {problem}")
        updates.append(RefUpdate(parts[0].decode(), parts[1].decode(), ref))
