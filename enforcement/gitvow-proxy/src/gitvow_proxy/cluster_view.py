"""One view of the cluster: every replica's decision counts and recent refusals, in the store.

Each replica's audit log is its own file, so ``gitvow status`` and the desk reading it saw
one replica's share. Instead each replica adds what it decided to the shared store: the
decision of each request is counted in memory (no store call on the request path) and a
thread of its own flushes the counts and the refusals, batched, about once a second
(:data:`FLUSH_INTERVAL`). What cannot be flushed (the store is down) is kept and tried
again; refusals beyond :data:`KEEP_REFUSALS` are dropped, counts never. ``gitvow status``
and the desk read the totals and the latest refusals of all replicas from the store
(:meth:`Store.tally`), and the decisions over time the desk charts (:meth:`Store.timeline`:
each decision counted in the :data:`~gitvow_proxy.store.interface.TALLY_SLOT` it was decided
in, so a flush delayed by an outage still lands in the right bucket); a store that is a file of one process keeps none, and the audit log is
read instead.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from gitvow_proxy.store import Store
from gitvow_proxy.store.interface import TALLY_SLOT

log = logging.getLogger("gitvow_proxy")

#: Seconds between flushes.
FLUSH_INTERVAL = 1.0
#: Refusals the store keeps (newest first), and at most kept here while it is down.
KEEP_REFUSALS = 100


class ClusterTally:
    """This replica's decisions not yet added to the store."""

    def __init__(self, store: Callable[[], Store | None]) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        #: The same counts by the TALLY_SLOT they were decided in, for the chart over time.
        self._timed: Counter[tuple[int, str]] = Counter()
        self._refusals: list[str] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def record(self, series: str | None, refusal: dict[str, Any] | None) -> None:
        """Count one decision (``series`` as :func:`gitvow_proxy.status.series_of` names it)."""
        if series is None:
            return
        slot = int(time.time()) // TALLY_SLOT * TALLY_SLOT
        with self._lock:
            self._counts[series] += 1
            self._timed[(slot, series)] += 1
            if refusal is not None:
                self._refusals.append(json.dumps(refusal, separators=(",", ":")))
                del self._refusals[:-KEEP_REFUSALS]
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="gitvow-tally", daemon=True)
                self._thread.start()

    def flush(self) -> None:
        """Add what was counted to the store; kept for the next flush when it cannot be."""
        store = self._store()
        if store is None:
            return
        with self._lock:
            counts, timed, refusals = self._counts, self._timed, self._refusals
            self._counts, self._timed, self._refusals = Counter(), Counter(), []
        if not counts and not refusals:
            return
        try:
            store.add_tally(dict(counts), refusals, dict(timed))
        except Exception:  # the store is down: keep it (the store logs its outage once)
            with self._lock:
                self._counts.update(counts)
                self._timed.update(timed)
                self._refusals[:0] = refusals
                del self._refusals[:-KEEP_REFUSALS]

    def stop(self) -> None:
        self._stop.set()
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL):
            self.flush()


def refusal_of(verdict: str, reason: str | None, agent: str | None, method: str, host: str, path: str,
               operations: tuple[str, ...], repo: str | None) -> dict[str, Any]:
    """A refusal as ``status`` shows it (the keys of its ``recent_refusals``)."""
    return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "agent": agent, "method": method,
            "host": host, "path": path, "operations": list(operations), "repo": repo, "verdict": verdict,
            "reason": reason}


__all__ = ["FLUSH_INTERVAL", "KEEP_REFUSALS", "ClusterTally", "refusal_of"]
