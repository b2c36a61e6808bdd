"""Reading a pushed packfile once: every object's id, type and size; commits and trees kept;
every new blob scanned for credentials as it is inflated; deltas resolved within the pack.

A receive-pack body carries ``PACK``, a version (2 or 3), an object count, the objects
(each a type-and-size header, a delta base for ``OFS_DELTA``/``REF_DELTA``, then a zlib
stream) and a SHA-1 trailer over all of it. The proxy advertises ``no-thin``, so a git client
sends packs whose deltas have their bases inside; a ``REF_DELTA`` whose base is not in the
pack cannot be read here and the pack is refused (:class:`PackError`).

Memory stays bounded beyond the body itself (which the proxy holds): commit and tree
contents are kept (they are small and the change is computed from them), blob contents are
not — a delta against a blob re-inflates its base from the body, through a small cache.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from gitvow.change import SecretFinding
from gitvow_gitsmart.limits import PACK_LIMIT  # a pushed pack larger than this is refused unread

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7
TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob", TAG: b"tag"}
_CHUNK = 64 * 1024
#: Sizes and offsets are at most 64 bits: a longer varint is refused before its bytes pile up
#: into an ever larger integer (a megabyte of continuation bytes would cost quadratic time).
_VARINT_BITS = 64
_BASE_CACHE = 32 * 1024 * 1024


class PackError(ValueError):
    """The pack could not be read completely: malformed, truncated, thin or over the limit."""


class PackTooLarge(PackError):
    """The pack is over the scan limit: refused unread."""


Scanner = Callable[[bytes], tuple[SecretFinding, ...]]


def _inflater() -> tuple[Callable[[], Any], tuple[type[BaseException], ...]]:
    """The fastest zlib-compatible inflater installed: ISA-L's (``isal``, which gitvow-gitsmart
    installs; about three times the standard library's speed), else :mod:`zlib`. Both check
    the stream's Adler-32 and stop at its end, leaving what follows in ``unused_data``."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - isal ships wheels for the platforms we test
        return zlib.decompressobj, (zlib.error,)
    isal_error = cast("type[BaseException]", isal_zlib.error)  # typed as an instance in isal's stubs
    return isal_zlib.decompressobj, (isal_error, zlib.error)


_DECOMPRESSOBJ, _INFLATE_ERRORS = _inflater()


@dataclass(slots=True)
class Pack:
    """What a pack holds. ``commits``/``trees`` keep contents by id; ``blobs`` sizes by id;
    ``findings`` the credentials found in each blob by id (without a path yet)."""

    commits: dict[str, bytes] = field(default_factory=dict)
    trees: dict[str, bytes] = field(default_factory=dict)
    blobs: dict[str, int] = field(default_factory=dict)
    tags: dict[str, bytes] = field(default_factory=dict)
    findings: dict[str, tuple[SecretFinding, ...]] = field(default_factory=dict)
    #: Where each blob's entry starts, so a protected file's text can be read again for a human.
    blob_at: dict[str, int] = field(default_factory=dict)
    size: int = 0
    #: Reads an entry's resolved (type, content) again by its offset, from the body.
    load: Callable[[int], tuple[int, bytes]] | None = None

    def blob(self, oid: str) -> bytes | None:
        """A pushed blob's content, inflated again (for a human who approves a protected file)."""
        offset = self.blob_at.get(oid)
        if offset is None or self.load is None:
            return None
        return self.load(offset)[1]

    def has(self, oid: str) -> bool:
        return oid in self.commits or oid in self.trees or oid in self.blobs or oid in self.tags


@dataclass(slots=True)
class _Entry:
    type: int
    offset: int
    oid: str


def _header(data: memoryview, pos: int) -> tuple[int, int, int]:
    """(type, size, position after the header) of the entry at ``pos``."""
    byte = data[pos]
    pos += 1
    kind = (byte >> 4) & 7
    size = byte & 15
    shift = 4
    while byte & 0x80:
        if pos >= len(data):
            raise PackError("truncated entry header")
        if shift > _VARINT_BITS:
            raise PackError("entry header too long")
        byte = data[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    return kind, size, pos


def _ofs(data: memoryview, pos: int) -> tuple[int, int]:
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        if pos >= len(data):
            raise PackError("truncated delta offset")
        if value.bit_length() > _VARINT_BITS:
            raise PackError("delta offset too long")
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def inflate(data: memoryview, pos: int, size: int) -> tuple[bytes, int]:
    """The ``size`` bytes of the zlib stream at ``pos`` and the position after the stream.

    Input is fed in pieces about as large as the object (a stream is rarely longer than
    its content), so what zlib copies back as unused input stays near the object's size;
    output is capped at ``size + 1`` so a stream that inflates beyond its header is refused
    without inflating it all."""
    inflater = _DECOMPRESSOBJ()
    out: list[bytes] = []
    got = 0
    chunk = min(size + size // 1000 + 64, _CHUNK * 16)
    end = len(data)
    while not inflater.eof:
        if pos >= end:
            raise PackError("truncated object data")
        piece = data[pos: pos + chunk]
        pos += len(piece)
        try:
            part = inflater.decompress(piece, size + 1 - got)
        except _INFLATE_ERRORS:
            raise PackError("object data does not inflate") from None
        got += len(part)
        if got > size:
            raise PackError("object larger than its header says")
        out.append(part)
        chunk = _CHUNK * 16
    if got != size:
        raise PackError("object smaller than its header says")
    return b"".join(out) if len(out) != 1 else out[0], pos - len(inflater.unused_data)


def _varint(delta: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(delta):
            raise PackError("truncated delta")
        if shift > _VARINT_BITS:
            raise PackError("delta size too long")
        byte = delta[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: source and target sizes, then copy and insert instructions."""
    source_size, pos = _varint(delta, 0)
    target_size, pos = _varint(delta, pos)
    if source_size != len(base):
        raise PackError("delta base has the wrong size")
    out = bytearray()
    end = len(delta)
    while pos < end:
        op = delta[pos]
        pos += 1
        if op & 0x80:
            offset = size = 0
            for i in range(4):
                if op & (1 << i):
                    offset |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if op & (0x10 << i):
                    size |= delta[pos] << (8 * i)
                    pos += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise PackError("delta copies beyond its base")
            out += base[offset: offset + size]
        elif op:
            out += delta[pos: pos + op]
            pos += op
        else:
            raise PackError("delta instruction 0 is reserved")
    if len(out) != target_size:
        raise PackError("delta result has the wrong size")
    return bytes(out)


def object_id(kind: int, content: bytes) -> str:
    sha = hashlib.sha1(TYPE_NAMES[kind] + b" %d\0" % len(content), usedforsecurity=False)
    sha.update(content)
    return sha.hexdigest()


class _Reader:
    """One pass over the pack; delta bases found by offset (OFS) or id (REF) within it."""

    def __init__(self, data: memoryview, scan: Scanner | None) -> None:
        self.data = data
        self.scan = scan
        self.pack = Pack(size=len(data))
        self.by_offset: dict[int, _Entry] = {}
        self.by_oid: dict[str, _Entry] = {}
        self.cache: OrderedDict[int, tuple[int, bytes]] = OrderedDict()
        self.cached = 0
        #: Delta instructions inflated by the first pass, kept (up to ``_BASE_CACHE`` bytes in
        #: all) so resolving a delta does not inflate it a second time.
        self.deltas: dict[int, bytes] = {}
        self.delta_bytes = 0

    def keep_delta(self, offset: int, delta: bytes) -> None:
        if self.delta_bytes + len(delta) <= _BASE_CACHE:
            self.deltas[offset] = delta
            self.delta_bytes += len(delta)

    def delta(self, offset: int, pos: int, size: int) -> bytes:
        """The delta instructions of the entry at ``offset`` (data at ``pos``), kept or inflated."""
        kept = self.deltas.pop(offset, None)
        if kept is not None:
            self.delta_bytes -= len(kept)
            return kept
        return inflate(self.data, pos, size)[0]

    def content(self, offset: int, depth: int = 0) -> tuple[int, bytes]:
        """The resolved type and content of the entry at ``offset`` (re-read from the body)."""
        hit = self.cache.get(offset)
        if hit is not None:
            self.cache.move_to_end(offset)
            return hit
        if depth > 64:
            raise PackError("delta chain too deep")
        kind, size, pos = _header(self.data, offset)
        if kind == OFS_DELTA:
            distance, pos = _ofs(self.data, pos)
            base_kind, base = self.content(self._base_at(offset - distance), depth + 1)
            kind, content = base_kind, apply_delta(base, self.delta(offset, pos, size))
        elif kind == REF_DELTA:
            base_entry = self.by_oid.get(bytes(self.data[pos: pos + 20]).hex())
            if base_entry is None:
                raise PackError("a delta's base is not in the pack (thin pack)")
            base_kind, base = self.content(base_entry.offset, depth + 1)
            kind, content = base_kind, apply_delta(base, self.delta(offset, pos + 20, size))
        else:
            content, _ = inflate(self.data, pos, size)
        self._remember(offset, kind, content)
        return kind, content

    def _base_at(self, offset: int) -> int:
        if offset not in self.by_offset:
            raise PackError("a delta's base offset is not an object of the pack")
        return offset

    def _remember(self, offset: int, kind: int, content: bytes) -> None:
        if len(content) > _BASE_CACHE // 4:
            return
        self.cache[offset] = (kind, content)
        self.cached += len(content)
        while self.cached > _BASE_CACHE:
            _, (_, old) = self.cache.popitem(last=False)
            self.cached -= len(old)

    def record(self, offset: int, kind: int, content: bytes) -> None:
        oid = object_id(kind, content)
        entry = _Entry(kind, offset, oid)
        self.by_offset[offset] = entry
        self.by_oid[oid] = entry
        pack = self.pack
        if kind == COMMIT:
            pack.commits[oid] = content
        elif kind == TREE:
            pack.trees[oid] = content
        elif kind == TAG:
            pack.tags[oid] = content
        elif kind == BLOB:
            pack.blobs[oid] = len(content)
            pack.blob_at[oid] = offset
            if self.scan is not None:
                found = self.scan(content)
                if found:
                    pack.findings[oid] = found
        else:
            raise PackError(f"object type {kind} is not a git object")


def read_pack(body: bytes | memoryview, *, limit: int = PACK_LIMIT, scan: Scanner | None = None) -> Pack:
    """Read a whole pack (``b""``: none, as a push of deletions only sends)."""
    data = memoryview(body)
    if len(data) == 0:
        return Pack()
    if len(data) > limit:
        raise PackTooLarge(f"the pack is {len(data)} bytes, over the scan limit of {limit}")
    if len(data) < 32 or bytes(data[:4]) != b"PACK":
        raise PackError("not a pack")
    version = int.from_bytes(data[4:8], "big")
    if version not in (2, 3):
        raise PackError(f"pack version {version} is not supported")
    count = int.from_bytes(data[8:12], "big")
    trailer = bytes(data[-20:])
    if hashlib.sha1(data[:-20], usedforsecurity=False).digest() != trailer:
        raise PackError("the pack's checksum does not match")
    reader = _Reader(data[:-20], scan)
    pos = 12
    deferred: list[int] = []
    for _ in range(count):
        offset = pos
        if pos >= len(reader.data):
            raise PackError("fewer objects than the pack declares")
        kind, size, pos = _header(reader.data, pos)
        if kind in (COMMIT, TREE, BLOB, TAG):
            content, pos = inflate(reader.data, pos, size)
            reader.record(offset, kind, content)
            if kind != BLOB:
                reader._remember(offset, kind, content)
            continue
        if kind == OFS_DELTA:
            _, pos = _ofs(reader.data, pos)
        elif kind == REF_DELTA:
            pos += 20
        else:
            raise PackError(f"object type {kind} is not a git object")
        delta, pos = inflate(reader.data, pos, size)
        reader.keep_delta(offset, delta)
        deferred.append(offset)
        reader.by_offset[offset] = _Entry(0, offset, "")
    if pos != len(reader.data):
        raise PackError("data after the last object")
    _resolve(reader, deferred)
    reader.pack.load = reader.content
    return reader.pack


def _resolve(reader: _Reader, deferred: list[int]) -> None:
    """Resolve deltas; a REF_DELTA may name a base that is itself a delta resolved later."""
    pending = list(deferred)
    while pending:
        left: list[int] = []
        for offset in pending:
            try:
                kind, content = reader.content(offset)
            except PackError:
                left.append(offset)
                continue
            reader.by_offset.pop(offset, None)
            reader.record(offset, kind, content)
        if len(left) == len(pending):
            reader.content(left[0])  # raises the reason
        pending = left


__all__ = ["BLOB", "COMMIT", "PACK_LIMIT", "TAG", "TREE", "Pack", "PackError", "PackTooLarge", "apply_delta", "object_id", "read_pack"]
