"""Finding canary tokens in what an agent sends out, however it was wrapped.

A canary is a token the proxy issues to an agent (it is the placeholder ``GH_TOKEN`` in the
agent's environment) and which no legitimate request body contains. Seeing it leave means
the agent is exfiltrating what it holds, so the request is refused (``canary_egress``).

The scan looks at the body as sent, percent-decoded, with JSON ``\\uXXXX`` escapes undone,
gzip-inflated, and — for a git push — every object of the pack inflated, with deltas
resolved against their bases in the same pack (a thin pack's delta whose base lies outside
it is scanned as sent: its inserted bytes, not what it copies). Each of those is also
looked at with its line breaks removed (CR, LF and their JSON escapes), so base64 wrapped
MIME-style at 76 columns is caught too; base64 is caught by looking for the token's base64
spelling at each of the three byte alignments. The token as written is matched whatever the
case of its letters (``GVC_…`` upper-cased by the agent still names it); its base64
spellings are matched exactly, since base64 is case-sensitive. Everything is bounded by ``limit`` bytes
examined (bodies, inflated objects and resolved deltas): a body that needs more is refused,
never forwarded unscanned, and a pack that does not parse is refused too.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from urllib.parse import unquote_to_bytes

_CHUNK = 64 * 1024
_JSON_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")
_GZIP_WINDOW = 16 + zlib.MAX_WBITS
_OFS_DELTA, _REF_DELTA = 6, 7
_TYPE_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
#: Line breaks as sent, and as JSON escapes them: MIME wraps base64 at 76 columns.
_BREAKS = re.compile(rb"\r|\n|\\r|\\n")


class ScanRefused(Exception):
    """The body cannot be scanned within the limit (too large, or a pack/gzip that does not parse)."""


def _base64_spellings(token: bytes) -> set[bytes]:
    """The parts of ``token``'s base64 encoding that do not depend on neighbouring bytes."""
    found = set()
    for shift in range(3):
        data = b"\0" * shift + token
        start_bit, end_bit = 8 * shift, 8 * len(data)
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(data)
            keep = [i for i in range(len(text)) if 6 * i >= start_bit and 6 * i + 6 <= end_bit]
            if keep:
                found.add(text[keep[0] : keep[-1] + 1])
    return found


class CanaryScanner:
    """Searches bodies for any of ``tokens`` (token → whom it was issued to)."""

    def __init__(self, tokens: Mapping[str, str], *, limit: int) -> None:
        self.limit = limit
        self._needles: list[tuple[bytes, str]] = []
        for token, owner in tokens.items():
            raw = token.encode()
            self._needles.append((raw, owner))
            self._needles.extend((spelling, owner) for spelling in _base64_spellings(raw))
        self._owners = dict(self._needles)
        # One pass over the text for every spelling of every token, then one over the text with
        # its ASCII letters lowered for the tokens as written (re.IGNORECASE is ~15x slower).
        self._pattern = re.compile(b"|".join(re.escape(n) for n, _ in self._needles)) if self._needles else None
        self._folded = {token.encode().lower(): owner for token, owner in tokens.items() if token}
        self._folded_pattern = (re.compile(b"|".join(re.escape(n) for n in self._folded))
                                if self._folded else None)

    def __bool__(self) -> bool:
        return bool(self._needles)

    def find(self, body: bytes, *, content_encoding: str = "", git_push: bool = False) -> str | None:
        """Whom the first canary found in ``body`` was issued to, or None. Raises ScanRefused."""
        if not self._needles or not body:
            return None
        if len(body) > self.limit:
            raise ScanRefused(f"the body is larger than the canary scan limit ({self.limit} bytes)")
        budget = [self.limit - len(body)]
        encoding = content_encoding.strip().lower() if content_encoding else ""
        if encoding == "gzip":
            body = _inflate(body, budget, gzip=True)
        elif encoding not in ("", "identity"):
            raise ScanRefused(f"cannot scan a body with content-encoding {content_encoding!r}")
        if not git_push and _plain(body):
            return self._search(body)  # nothing to decode, no line break: the body is the only view
        for text in self._views(body, budget, git_push):
            owner = self._search(text)
            if owner is not None:
                return owner
        return None

    def _views(self, body: bytes, budget: list[int], git_push: bool) -> Iterator[bytes]:
        for text in self._decoded(body, budget, git_push):
            yield text
            if _BREAKS.search(text) is not None:
                yield _BREAKS.sub(b"", text)

    @staticmethod
    def _decoded(body: bytes, budget: list[int], git_push: bool) -> Iterator[bytes]:
        yield body
        if body.find(b"%") >= 0:
            yield unquote_to_bytes(body.replace(b"+", b" "))
        if body.find(b"\\u") >= 0:
            yield _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)).encode("utf-8", "replace"), body)
        if git_push:
            yield from _pack_objects(body, budget)

    def _search(self, text: bytes) -> str | None:
        found = self._pattern.search(text) if self._pattern is not None else None
        if found is not None:
            return self._owners[found.group()]
        folded = self._folded_pattern.search(text.lower()) if self._folded_pattern is not None else None
        return self._folded[folded.group()] if folded is not None else None


def _plain(body: bytes) -> bool:
    """Whether ``body`` is its only view: no percent escape, no JSON ``\\u`` escape, no line
    break as sent or JSON-escaped (what :meth:`CanaryScanner._views` would add a view for).

    ``bytes.find`` rather than ``in``: on CPython 3.12 ``in`` on bytes first tries the operand
    as an integer and clears the TypeError, several times the cost of the search itself."""
    find = body.find
    return (find(b"%") < 0 and find(b"\n") < 0 and find(b"\r") < 0
            and (find(b"\\") < 0 or (find(b"\\u") < 0 and find(b"\\n") < 0 and find(b"\\r") < 0)))


def _inflate(data: bytes | memoryview, budget: list[int], *, gzip: bool = False) -> bytes:
    inflater = zlib.decompressobj(_GZIP_WINDOW if gzip else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, budget[0] + 1)
    except zlib.error:
        raise ScanRefused("the compressed body does not inflate") from None
    if len(out) > budget[0] or inflater.unconsumed_tail:
        raise ScanRefused("the inflated body is larger than the canary scan limit")
    budget[0] -= len(out)
    return out


def _skip_pkt_section(body: bytes, pos: int) -> int:
    """Position after the flush packet ending the pkt-line section that starts at ``pos``."""
    while True:
        head = body[pos : pos + 4]
        if len(head) < 4:
            raise ScanRefused("push commands are truncated")
        try:
            size = int(head, 16)
        except ValueError:
            raise ScanRefused("push commands are not pkt-lines") from None
        if size == 0:
            return pos + 4
        if size < 4:
            raise ScanRefused("push commands are not pkt-lines")
        pos += size


def _pack_objects(body: bytes, budget: list[int]) -> Iterator[bytes]:
    """Every object of a receive-pack body's pack: each inflated as sent (a delta's own bytes),
    then each delta resolved against its base when that base is in the pack."""
    pos = _skip_pkt_section(body, 0)
    if pos < len(body) and body[pos : pos + 4] != b"PACK":
        pos = _skip_pkt_section(body, pos)  # push options
    if pos >= len(body):
        return  # a delete-only push carries no pack
    if body[pos : pos + 4] != b"PACK" or len(body) < pos + 12:
        raise ScanRefused("the push does not carry a readable pack")
    count = int.from_bytes(body[pos + 8 : pos + 12], "big")
    pos += 12
    view = memoryview(body)
    objects: list[_PackObject] = []
    for _ in range(count):
        start = pos
        if pos >= len(body):
            raise ScanRefused("the pack is truncated")
        byte = body[pos]
        kind = (byte >> 4) & 7
        pos += 1
        while byte & 0x80:
            if pos >= len(body):
                raise ScanRefused("the pack is truncated")
            byte = body[pos]
            pos += 1
        base: int | bytes | None = None
        if kind == _OFS_DELTA:
            if pos >= len(body):
                raise ScanRefused("the pack is truncated")
            byte = body[pos]
            pos += 1
            distance = byte & 0x7F
            while byte & 0x80:
                if pos >= len(body):
                    raise ScanRefused("the pack is truncated")
                byte = body[pos]
                pos += 1
                distance = ((distance + 1) << 7) | (byte & 0x7F)
            base = start - distance
        elif kind == _REF_DELTA:
            base = bytes(body[pos : pos + 20])
            pos += 20
        elif kind not in _TYPE_NAMES:
            raise ScanRefused("the pack holds an object of unknown type")
        out, pos = _inflate_object(view, pos, budget)
        objects.append(_PackObject(start, kind, out, base))
        yield out
    yield from _resolve_deltas(objects, budget)


class _PackObject:
    """One pack entry: where it starts, its type, its inflated bytes, and a delta's base
    (the base's offset for an offset delta, its object id for a ref delta)."""

    __slots__ = ("base", "data", "kind", "start")

    def __init__(self, start: int, kind: int, data: bytes, base: int | bytes | None) -> None:
        self.start, self.kind, self.data, self.base = start, kind, data, base


def _resolve_deltas(objects: list[_PackObject], budget: list[int]) -> Iterator[bytes]:
    """The content of every delta whose base chain ends in the pack, bases first.

    A ref delta whose base is not in the pack (a thin pack: the receiver has the base) cannot
    be resolved here; its own bytes were scanned as sent.
    """
    waiting: dict[int | bytes, list[_PackObject]] = {}
    for item in objects:
        if item.base is not None:
            waiting.setdefault(item.base, []).append(item)
    if not waiting:
        return
    starts = {item.start for item in objects}
    for item in objects:
        if isinstance(item.base, int) and item.base not in starts:
            raise ScanRefused("an offset delta's base is not in the pack")
    need_ids = any(isinstance(key, bytes) for key in waiting)
    resolved: deque[tuple[_PackObject, int, bytes]] = deque(
        (item, item.kind, item.data) for item in objects if item.base is None
    )
    while resolved:
        item, kind, content = resolved.popleft()
        keys: list[int | bytes] = [item.start]
        if need_ids:
            header = b"%s %d\0" % (_TYPE_NAMES[kind], len(content))
            keys.append(hashlib.sha1(header + content, usedforsecurity=False).digest())
        for key in keys:
            for delta in waiting.pop(key, ()):
                target = _apply_delta(content, delta.data, budget)
                yield target
                resolved.append((delta, kind, target))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _apply_delta(base: bytes, delta: bytes, budget: list[int]) -> bytes:
    """git's delta format: the base's size, the result's size, then copy and insert instructions."""
    try:
        source_size, pos = _varint(delta, 0)
        target_size, pos = _varint(delta, pos)
        if source_size != len(base):
            raise ScanRefused("a pack delta does not fit its base")
        if target_size > budget[0]:
            raise ScanRefused("the pack's deltas resolve beyond the canary scan limit")
        out = bytearray()
        end = len(delta)
        while pos < end:
            command = delta[pos]
            pos += 1
            if command & 0x80:
                offset = size = 0
                for i in range(4):
                    if command & (1 << i):
                        offset |= delta[pos] << (8 * i)
                        pos += 1
                for i in range(3):
                    if command & (0x10 << i):
                        size |= delta[pos] << (8 * i)
                        pos += 1
                size = size or 0x10000
                if offset + size > len(base):
                    raise ScanRefused("a pack delta copies beyond its base")
                out += base[offset : offset + size]
            elif command:
                if pos + command > end:
                    raise ScanRefused("a pack delta is truncated")
                out += delta[pos : pos + command]
                pos += command
            else:
                raise ScanRefused("a pack delta holds a reserved instruction")
            if len(out) > target_size:
                raise ScanRefused("a pack delta is longer than it says")
    except IndexError:
        raise ScanRefused("a pack delta is truncated") from None
    if len(out) != target_size:
        raise ScanRefused("a pack delta is shorter than it says")
    budget[0] -= len(out)
    return bytes(out)


def _inflate_object(view: memoryview, pos: int, budget: list[int]) -> tuple[bytes, int]:
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    pending: bytes | memoryview = view[pos : pos + _CHUNK]
    pos += len(pending)
    try:
        while True:
            out = inflater.decompress(pending, budget[0] + 1)
            budget[0] -= len(out)
            if budget[0] < 0:
                raise ScanRefused("the pack inflates beyond the canary scan limit")
            parts.append(out)
            if inflater.eof:
                return b"".join(parts), pos - len(inflater.unused_data)
            pending = inflater.unconsumed_tail
            if not pending:
                pending = view[pos : pos + _CHUNK]
                pos += len(pending)
                if not pending:
                    raise ScanRefused("the pack is truncated")
    except zlib.error:
        raise ScanRefused("a pack object does not inflate") from None
