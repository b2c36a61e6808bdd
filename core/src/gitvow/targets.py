"""Settling what a request targets by asking the forge: the cache and the bookkeeping.

Adapters name the objects a request acts on by opaque identifiers as
:class:`~gitvow.request.Target` s; :meth:`gitvow.adapter.Adapter.resolve` turns them into
:class:`~gitvow.request.Resolution` s by asking the forge (the enforcement point gives it a
:data:`Fetch` that carries the injected credential). This module holds what is the same for
every forge: the bounded cache with a time to live that an enforcement point keeps of the
forge's answers (so one object is asked about once; the engine asks with a
:class:`gitvow.needs.Lookup` and never sees it), and :func:`settle`, which folds the answers
into the classification. Nothing here does I/O.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from threading import Event, Lock

from gitvow.request import Classification, Resolution, Target

#: ``fetch(method, path, body)`` → ``(status, body)``: one request to the forge host the
#: classified request went to, with the credential the proxy injects. Raises ``OSError``
#: on a transport failure.
Fetch = Callable[[str, str, bytes], tuple[int, bytes]]

#: Marks a lookup that failed, so it is not repeated for every request (for ``negative_ttl``).
_FAILED = Resolution(repo=None, type="\0failed")


@dataclass(frozen=True, slots=True)
class _Entry:
    answer: Resolution
    expires: float


class ResolutionCache:
    """Answers by ``(scope, target)``, at most ``size`` of them, each for ``ttl`` seconds.

    ``scope`` names the adapter and host (``github@ghes.example:443``): the same node id on two
    hosts is two objects. A failed lookup is remembered for ``negative_ttl`` seconds so an
    agent retrying cannot make the proxy hammer the forge; until then it stays unresolved.
    """

    def __init__(self, *, size: int = 4096, ttl: float = 300.0, negative_ttl: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, wait: float = 30.0) -> None:
        self.size = size
        self.wait = wait
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.clock = clock
        self._entries: OrderedDict[tuple[str, Target], _Entry] = OrderedDict()
        self._lock = Lock()
        self._inflight: dict[tuple[str, Target], Event] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, scope: str, targets: Iterable[Target]) -> tuple[dict[Target, Resolution], list[Target]]:
        """Cached answers (failed lookups left out) and the targets not cached."""
        now = self.clock()
        found: dict[Target, Resolution] = {}
        missing: list[Target] = []
        with self._lock:
            for target in targets:
                key = (scope, target)
                entry = self._entries.get(key)
                if entry is None or entry.expires <= now:
                    if entry is not None:
                        del self._entries[key]
                    missing.append(target)
                    continue
                self._entries.move_to_end(key)
                if entry.answer is not _FAILED:
                    found[target] = entry.answer
        return found, missing

    def store(self, scope: str, targets: Iterable[Target], answers: Mapping[Target, Resolution]) -> None:
        """Remember ``answers``; every other target of ``targets`` as failed."""
        now = self.clock()
        with self._lock:
            for target in targets:
                answer = answers.get(target)
                ttl = self.ttl if answer is not None else self.negative_ttl
                key = (scope, target)
                self._entries[key] = _Entry(answer if answer is not None else _FAILED, now + ttl)
                self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def resolve(self, scope: str, targets: Sequence[Target],
                resolver: Callable[[Sequence[Target]], Mapping[Target, Resolution]]) -> None:
        """Ask ``resolver`` about the targets not cached and remember what it says.

        Anything ``resolver`` raises is a failed lookup for every target asked about: the
        targets stay unresolved and the gates refuse with ``repo_unresolved``.
        """
        _, missing = self.lookup(scope, targets)
        if not missing:
            return
        # Concurrent requests about the same target share one lookup: the first asks, the
        # others wait for its answer (and count as failed if it never comes).
        mine: list[Target] = []
        theirs: list[Event] = []
        done = Event()
        with self._lock:
            for target in missing:
                running = self._inflight.get((scope, target))
                if running is None:
                    self._inflight[(scope, target)] = done
                    mine.append(target)
                else:
                    theirs.append(running)
        try:
            if mine:
                try:
                    answers = dict(resolver(mine))
                except Exception:
                    answers = {}
                self.store(scope, mine, answers)
        finally:
            with self._lock:
                for target in mine:
                    self._inflight.pop((scope, target), None)
            done.set()
        for event in theirs:
            event.wait(self.wait)


def settle(classification: Classification, answers: Mapping[Target, Resolution]) -> Classification:
    """``classification`` with the answered targets folded in.

    Each answer's repository joins ``repos``; a target whose type has an entry in its
    ``by_type`` replaces the operations; unanswered targets stay in ``targets`` (so the
    repository stays unestablished). An object that belongs to no repository (a user, an
    organisation) adds none and leaves the target settled.
    """
    if not answers:
        return classification
    repos = list(classification.repos)
    operations = classification.operations
    left: list[Target] = []
    for target in classification.targets:
        answer = answers.get(target)
        if answer is None:
            left.append(target)
            continue
        if answer.repo is not None and answer.repo not in repos:
            repos.append(answer.repo)
        for type_, replacement in target.by_type:
            if answer.type == type_:
                operations = replacement
    return replace(classification, operations=operations, repos=tuple(repos), targets=tuple(left),
                   repo=repos[0] if len(repos) == 1 else classification.repo)


def needs_type(classification: Classification) -> tuple[Target, ...]:
    """The targets whose answer may change the operations (they have a ``by_type``)."""
    return tuple(t for t in classification.targets if t.by_type)


__all__ = ["Fetch", "ResolutionCache", "needs_type", "settle"]
