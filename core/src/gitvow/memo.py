"""The runtime's one cache: answers that are pure functions of a key, kept by declared kinds.

An enforcement point may keep an answer only when the answer depends on nothing but its key
and on the policy load the cache belongs to (an :class:`~gitvow.pipeline.Engine` owns one: a
reload builds a new engine, so an empty cache). Each kind of entry is declared once, with
the bound it is kept to and, in words, exactly what its key holds (``Kind.key``), so a
reader can check a kind against the code that builds its keys, and ``gitvow``'s own tests
can switch every kind off at once: the decisions of every corpus must be the same with the
cache on and off (``tests/agreement/test_memo_on_and_off.py``).

``GITVOW_MEMO=off`` in the environment turns the cache off for the process: an operator in
doubt trades speed for certainty without changing the policy.

Kept out of here on purpose: what the forge said an opaque id names
(:class:`gitvow.targets.ResolutionCache`), which is forge state with a time to live, not a
pure answer, and the parse of a GraphQL document (:class:`gitvow.graphql.DocumentCache`),
which an adapter keeps by the document's bytes.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from dataclasses import dataclass

#: The environment variable that turns every kind off (``off``).
MEMO_ENV = "GITVOW_MEMO"


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of entry: its name, how many are kept (full, the kind starts over: cheaper per
    request than an order of use), and what its key holds, in words."""

    name: str
    size: int
    key: str


class Memo:
    """Entries by declared kind; :meth:`get` finds nothing while the memo is off."""

    def __init__(self, *, enabled: bool | None = None) -> None:
        self.enabled = enabled if enabled is not None else os.environ.get(MEMO_ENV, "").strip().lower() != "off"
        self._kinds: dict[str, Kind] = {}
        self._entries: dict[str, dict[Hashable, object]] = {}

    def declare(self, kind: Kind) -> Kind:
        """Declare ``kind`` (again: the same declaration is a no-op; another one is an error)."""
        known = self._kinds.get(kind.name)
        if known is not None and known != kind:
            raise ValueError(f"memo kind {kind.name!r} is declared twice, differently")
        self._kinds[kind.name] = kind
        self._entries.setdefault(kind.name, {})
        return kind

    @property
    def kinds(self) -> tuple[Kind, ...]:
        return tuple(self._kinds.values())

    def get(self, kind: Kind, key: Hashable) -> object | None:
        if not self.enabled:
            return None
        entries = self._entries.get(kind.name)
        return entries.get(key) if entries is not None else None

    def put(self, kind: Kind, key: Hashable, value: object) -> None:
        """Keep ``value`` under ``key`` (a kind not declared yet is declared by its first entry)."""
        if not self.enabled:
            return
        entries = self._entries.get(kind.name)
        if entries is None or self._kinds[kind.name] is not kind:
            self.declare(kind)
            entries = self._entries[kind.name]
        if len(entries) >= kind.size:
            entries.clear()
        entries[key] = value

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())


__all__ = ["MEMO_ENV", "Kind", "Memo"]
