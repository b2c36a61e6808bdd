"""A request's header fields as the pipeline reads them: mitmproxy's reading, at a dict's cost.

mitmproxy's ``Headers`` looks a name up by encoding it, then lower-casing and comparing every
field through two Python calls each: about 2 µs per lookup, and an adapter and the body stage
each look ``content-encoding`` up. :class:`HeaderFields` reads the same fields the same way
(names compared as lower-cased bytes, repeated fields folded with ``", "``, values decoded as
UTF-8 with surrogate escapes) from one table built on the first lookup; a request nobody asks
a header of builds none.

It holds the fields tuple the request had when it was built. mitmproxy replaces that tuple
whenever a header is set, so what is rewritten afterwards (the credential injected after the
decision) is never seen: the pipeline judges the headers as the agent sent them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar, overload

T = TypeVar("T")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class HeaderFields(Mapping[str, str]):
    """Read-only, case-blind view of raw ``(name, value)`` header fields (mitmproxy's ``Headers.fields``)."""

    __slots__ = ("_fields", "_table")

    def __init__(self, fields: tuple[tuple[bytes, bytes], ...]) -> None:
        self._fields = fields
        #: lower-cased name → (the name as first sent, the value; repeated fields folded), raw:
        #: only what is looked up is decoded (", " is ASCII, so decoding the folded bytes is
        #: decoding each value and folding them).
        self._table: dict[bytes, tuple[bytes, bytes]] | None = None

    def _folded(self) -> dict[bytes, tuple[bytes, bytes]]:
        table = self._table
        if table is None:
            table = {}
            for name, value in self._fields:
                key = name.lower()
                seen = table.get(key)
                table[key] = (name, value) if seen is None else (seen[0], seen[1] + b", " + value)
            self._table = table
        return table

    @staticmethod
    def _key(name: str) -> bytes:
        return name.encode("utf-8", "surrogateescape").lower()

    def __getitem__(self, name: str) -> str:
        return _text(self._folded()[self._key(name)][1])

    @overload
    def get(self, name: str, /) -> str | None: ...

    @overload
    def get(self, name: str, /, default: str | T) -> str | T: ...

    def get(self, name: str, /, default: object = None) -> object:
        found = self._folded().get(self._key(name))
        return default if found is None else _text(found[1])

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._key(name) in self._folded()

    def __iter__(self) -> Iterator[str]:
        return (_text(name) for name, _ in self._folded().values())

    def __len__(self) -> int:
        return len(self._folded())

    def __repr__(self) -> str:  # names only: values carry the agent's credentials
        return f"HeaderFields({list(self)!r})"


__all__ = ["HeaderFields"]
