"""The canary scanner within its documented coverage: MIME-wrapped base64, and pack deltas
resolved against bases in the same pack (real ``git pack-objects`` packs and hand-built ones)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import zlib
from pathlib import Path
from urllib.parse import urlencode

import pytest

from gitvow_proxy.canary import CanaryScanner, ScanRefused, _pack_objects

TOKEN = "gvc_0123456789abcdef0123456789abcdef"
HALF = len(TOKEN) // 2


def scanner(limit: int = 1 << 20) -> CanaryScanner:
    return CanaryScanner({TOKEN: "bot"}, limit=limit)


# -- case ----------------------------------------------------------------------------------

@pytest.mark.parametrize("spell", [str.upper, str.title, str.swapcase, lambda t: t[:HALF].upper() + t[HALF:]])
def test_the_token_is_found_whatever_the_case_of_its_letters(spell: object) -> None:
    assert callable(spell)
    leaked = spell(TOKEN)
    assert leaked != TOKEN
    for body in (f"thanks! {leaked}".encode(), json.dumps({"body": leaked}).encode(),
                 urlencode({"body": leaked}).encode()):
        assert scanner().find(body) == "bot"
    assert scanner().find(b"thanks! GVC_" + b"9" * 32) is None


# -- MIME-style base64 ---------------------------------------------------------------------

def _wrapped(prefix: bytes, *, newline: bytes = b"\n") -> bytes:
    """``prefix + TOKEN`` base64-encoded and wrapped at 76 columns, with a break inside the token."""
    for pad in range(200):
        text = base64.encodebytes(prefix + b"p" * pad + TOKEN.encode())
        lines = text.split(b"\n")
        # Find a padding for which no line holds any base64 spelling of the token whole.
        if not any(spelling in line for line in lines for spelling in _spellings()):
            return newline.join(lines)
    raise AssertionError("no padding breaks the token")


def _spellings() -> list[bytes]:
    from gitvow_proxy.canary import _base64_spellings

    return sorted(_base64_spellings(TOKEN.encode()))


@pytest.mark.parametrize("shape", ["raw-lf", "raw-crlf", "json", "json-crlf", "form"])
def test_base64_broken_by_line_breaks_is_found(shape: str) -> None:
    newline = b"\r\n" if shape.endswith("crlf") else b"\n"
    text = _wrapped(b"attachment: " * 10, newline=newline)
    clean = base64.encodebytes(b"attachment: " * 10 + b"gvc_" + b"9" * 32).replace(b"\n", newline)
    bodies = {
        "raw-lf": (text, clean),
        "raw-crlf": (text, clean),
        "json": (json.dumps({"body": text.decode()}).encode(), json.dumps({"body": clean.decode()}).encode()),
        "json-crlf": (json.dumps({"body": text.decode()}).encode(), json.dumps({"body": clean.decode()}).encode()),
        "form": (urlencode({"body": text.decode()}).encode(), urlencode({"body": clean.decode()}).encode()),
    }
    leaking, control = bodies[shape]
    assert not any(spelling in leaking for spelling in _spellings())  # only unwrapping shows it
    assert scanner().find(leaking) == "bot"
    assert scanner().find(control) is None


# -- packs with deltas -----------------------------------------------------------------------

_LINE = b"0" * 40 + b" " + b"1" * 40 + b" refs/heads/x\0report-status\n"
COMMANDS = b"%04x" % (len(_LINE) + 4) + _LINE + b"0000"
FILLER = b"".join(b"line %d of a file that stays the same\n" % i for i in range(300))
#: The token split by a middle part: neither this blob nor a delta copying around the middle
#: holds the token; the blob the delta makes does.
BASE = FILLER + TOKEN[:HALF].encode() + b"\n" + b"MIDDLE PART " * 40 + b"\n" + TOKEN[HALF:].encode() + b"\n"
TARGET = FILLER + TOKEN[:HALF].encode() + TOKEN[HALF:].encode() + b"\n"


def _git_pack(tmp_path: Path, *, offsets: bool) -> bytes:
    env = {"GIT_DIR": str(tmp_path / "r.git"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True, env=env)
    ids = [
        subprocess.run(["git", "hash-object", "-w", "--stdin"], input=blob, capture_output=True, check=True,
                       env=env).stdout.strip()
        for blob in (BASE, TARGET)
    ]
    flags = ["--delta-base-offset"] if offsets else []
    return subprocess.run(["git", "pack-objects", "--stdout", *flags], input=b"\n".join(ids) + b"\n",
                          capture_output=True, check=True, env=env).stdout


def _as_sent(body: bytes) -> list[bytes]:
    """The pack's objects as sent (each inflated, deltas unresolved)."""
    count = int.from_bytes(body[len(COMMANDS) + 8 : len(COMMANDS) + 12], "big")
    return list(_pack_objects(body, [1 << 30]))[:count]


@pytest.mark.parametrize("offsets", [True, False], ids=["ofs-delta", "ref-delta"])
def test_a_token_only_a_delta_makes_is_found_in_a_real_git_pack(tmp_path: Path, offsets: bool) -> None:
    body = COMMANDS + _git_pack(tmp_path, offsets=offsets)
    assert not any(TOKEN.encode() in obj for obj in _as_sent(body))  # git stored the target as a delta
    assert scanner().find(body, git_push=True) == "bot"


def _size_header(kind: int, size: int) -> bytes:
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _copy(offset: int, size: int) -> bytes:
    command, args = 0x80, bytearray()
    for i in range(4):
        if (offset >> (8 * i)) & 0xFF:
            command |= 1 << i
            args.append((offset >> (8 * i)) & 0xFF)
    for i in range(3):
        if (size >> (8 * i)) & 0xFF:
            command |= 0x10 << i
            args.append((size >> (8 * i)) & 0xFF)
    return bytes([command]) + bytes(args)


def _delta(base: bytes, pieces: list[bytes]) -> bytes:
    instructions = b"".join(pieces)
    return _varint(len(base)) + _varint(len(_reference_apply(base, instructions))) + instructions


def _reference_apply(base: bytes, instructions: bytes) -> bytes:
    out, pos = bytearray(), 0
    while pos < len(instructions):
        command = instructions[pos]
        pos += 1
        if command & 0x80:
            offset = size = 0
            for i in range(4):
                if command & (1 << i):
                    offset |= instructions[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if command & (0x10 << i):
                    size |= instructions[pos] << (8 * i)
                    pos += 1
            out += base[offset : offset + (size or 0x10000)]
        else:
            out += instructions[pos : pos + command]
            pos += command
    return bytes(out)


def _oid(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()


def _pack(entries: list[tuple[int, bytes, bytes | int | None]], *, ofs_shift: int = 0) -> bytes:
    """entries: (kind, data, base) with base an object id (ref delta) or an entry index (ofs
    delta); ``ofs_shift`` moves every offset delta's base off its object's start."""
    out = bytearray(b"PACK" + (2).to_bytes(4, "big") + len(entries).to_bytes(4, "big"))
    starts: list[int] = []
    for kind, data, base in entries:
        start = len(out)
        starts.append(start)
        out += _size_header(kind, len(data))
        if kind == 6:
            assert isinstance(base, int)
            distance = start - starts[base] - ofs_shift
            encoded = [distance & 0x7F]
            distance >>= 7
            while distance:
                distance -= 1
                encoded.append(0x80 | (distance & 0x7F))
                distance >>= 7
            out += bytes(reversed(encoded))
        elif kind == 7:
            assert isinstance(base, bytes)
            out += base
        out += zlib.compress(data)
    return COMMANDS + bytes(out) + b"\0" * 20


SPLIT = BASE.index(b"MIDDLE")
AFTER = BASE.index(TOKEN[HALF:].encode())
TARGET_DELTA = _delta(BASE, [_copy(0, SPLIT - 1), _copy(AFTER, len(BASE) - AFTER)])


def test_hand_built_deltas_offset_ref_and_chained() -> None:
    assert _reference_apply(BASE, TARGET_DELTA[len(_varint(len(BASE))) + len(_varint(len(TARGET))):]) == TARGET
    assert TOKEN.encode() not in BASE and TOKEN.encode() not in TARGET_DELTA
    assert scanner().find(_pack([(3, BASE, None), (6, TARGET_DELTA, 0)]), git_push=True) == "bot"
    assert scanner().find(_pack([(3, BASE, None), (7, TARGET_DELTA, _oid(BASE))]), git_push=True) == "bot"
    # A ref delta may come before its base in the pack.
    assert scanner().find(_pack([(7, TARGET_DELTA, _oid(BASE)), (3, BASE, None)]), git_push=True) == "bot"
    # A chain: an innocent middle version, then a delta on it that makes the token.
    middle = BASE.replace(b"MIDDLE", b"middle", 1)
    to_middle = _delta(BASE, [_copy(0, SPLIT), b"\x06middle", _copy(SPLIT + 6, len(BASE) - SPLIT - 6)])
    on_middle = _delta(middle, [_copy(0, SPLIT - 1), _copy(AFTER, len(middle) - AFTER)])
    chained = _pack([(3, BASE, None), (6, to_middle, 0), (7, on_middle, _oid(middle))])
    assert scanner().find(chained, git_push=True) == "bot"
    clean = _pack([(3, BASE, None), (6, _delta(BASE, [_copy(0, SPLIT)]), 0)])
    assert scanner().find(clean, git_push=True) is None


def test_a_thin_pack_delta_is_scanned_as_sent_only() -> None:
    """Documented limit: a base the receiver already has is not in the pack, so what a delta
    copies from it is not seen; what it inserts is."""
    thin = _pack([(7, TARGET_DELTA, _oid(BASE))])
    assert scanner().find(thin, git_push=True) is None
    inserting = _delta(BASE, [_copy(0, 10), bytes([len(TOKEN)]) + TOKEN.encode()])
    assert scanner().find(_pack([(7, inserting, _oid(BASE))]), git_push=True) == "bot"


@pytest.mark.parametrize(
    "broken",
    [
        [(3, BASE, None), (6, _varint(len(BASE) + 1) + _varint(5) + _copy(0, 5), 0)],  # wrong base size
        [(3, BASE, None), (6, _varint(len(BASE)) + _varint(5) + _copy(len(BASE) - 2, 5), 0)],  # copies past it
        [(3, BASE, None), (6, _varint(len(BASE)) + _varint(5) + b"\x00", 0)],  # reserved instruction
        [(3, BASE, None), (6, _varint(len(BASE)) + _varint(50) + _copy(0, 5), 0)],  # shorter than it says
        [(3, BASE, None), (6, _varint(len(BASE)) + _varint(5) + b"\x09abc", 0)],  # truncated insert
    ],
    ids=["base-size", "copy-past-base", "reserved", "short", "truncated"],
)
def test_a_delta_that_does_not_apply_is_refused(broken: list[tuple[int, bytes, bytes | int | None]]) -> None:
    with pytest.raises(ScanRefused):
        scanner().find(_pack(broken), git_push=True)


def test_an_offset_delta_whose_base_is_not_an_object_is_refused() -> None:
    for shift in (1, -1):
        with pytest.raises(ScanRefused, match="base is not in the pack"):
            scanner().find(_pack([(3, BASE, None), (6, TARGET_DELTA, 0)], ofs_shift=shift), git_push=True)


def test_resolved_deltas_count_against_the_scan_limit() -> None:
    # A tiny delta that copies the base 40 times: small as sent, large once resolved.
    blow_up = _delta(BASE, [_copy(0, len(BASE))] * 40)
    body = _pack([(3, BASE, None), (6, blow_up, 0)])
    assert len(body) < 40_000
    with pytest.raises(ScanRefused, match="scan limit"):
        scanner(limit=100_000).find(body, git_push=True)
    assert scanner(limit=1 << 20).find(body, git_push=True) is None
