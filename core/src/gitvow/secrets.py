"""Finding credentials of known formats in what a write adds, without ever repeating them.

The formats are detect-secrets' known-format detectors (:mod:`gitvow.secret_patterns`, derived
by ``scripts/derive_secret_patterns.py``). A scan is a ``bytes.find`` pass per literal anchor
(C speed) and a regular expression only in a window around each anchor found, so a 50 MB push
is read at the speed the pack is inflated. A finding carries the kind and a fingerprint (a
SHA-256 prefix of the matched text); the secret itself goes nowhere.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache

from gitvow.change import SecretFinding
from gitvow.secret_patterns import PATTERNS

#: How far before an anchor a match may start, and after it end (private keys: the header only).
_BEFORE = 16
_AFTER = 1100
#: Bytes after a private key header folded into its fingerprint (the header alone is not the key).
_KEY_TAIL = 96


@dataclass(frozen=True, slots=True)
class _Format:
    kind: str
    anchors: tuple[bytes, ...]
    regexes: tuple[re.Pattern[bytes], ...]


@cache
def _formats() -> tuple[_Format, ...]:
    return tuple(_Format(kind, anchors, tuple(re.compile(p) for p in patterns)) for kind, anchors, patterns in PATTERNS)


def fingerprint(secret: bytes) -> str:
    """What names a secret in denials, audit lines and ``[secrets] allow``: 16 hex digits of SHA-256."""
    return hashlib.sha256(secret).hexdigest()[:16]


def _matches(data: bytes, fmt: _Format, anchor: bytes) -> list[bytes]:
    found: list[bytes] = []
    start = data.find(anchor)
    while start >= 0:
        low, high = max(0, start - _BEFORE), min(len(data), start + len(anchor) + _AFTER)
        for regex in fmt.regexes:
            match = regex.search(data, low, high)
            if match is not None and match.start() <= start < match.end():
                text = match.group(0)
                if fmt.kind == "private_key":
                    text = data[match.start(): match.end() + _KEY_TAIL]
                found.append(text)
                break
        start = data.find(anchor, start + len(anchor))
    return found


def scan(data: bytes, path: str = "") -> tuple[SecretFinding, ...]:
    """The credentials of known formats in ``data``, each once (by kind and fingerprint)."""
    findings: dict[tuple[str, str], SecretFinding] = {}
    for fmt in _formats():
        for anchor in fmt.anchors:
            if anchor not in data:
                continue
            for text in _matches(data, fmt, anchor):
                key = (fmt.kind, fingerprint(text))
                findings.setdefault(key, SecretFinding(fmt.kind, key[1], path))
    return tuple(findings.values())


def scan_text(text: str, path: str = "") -> tuple[SecretFinding, ...]:
    """:func:`scan` of a write body's text (contents API, commit mutations)."""
    return scan(text.encode("utf-8", "surrogateescape"), path)


__all__ = ["fingerprint", "scan", "scan_text"]
