"""Reading large flow files and HAR files on every core.

Reading, not deciding, is what replay spends its time on: mitmproxy's tnetstring parser and
HAR reader are pure Python. Records are independent of one another until the agent of each is
resolved (a CONNECT's user applies to the later flows of its connection) and the stateful
gates run (the budget windows, in time order), so this module only reads: the file is cut at
record boundaries (:func:`flowfile.spans`; a HAR's entries list), the pieces are read by a
pool of processes, and the parent gets every :class:`Seen` back in file order. Resolving
agents and deciding stay in the parent, sequential, so the report is the same as one process
makes (a test holds both to that).

Below :data:`PARALLEL_MIN_RECORDS` a file is read in this process: starting the pool costs
more than it saves. Anything the fast path cannot read returns None, and the caller reads
the file with mitmproxy's ``FlowReader``, whose error is then the one reported.
"""

from __future__ import annotations

import gc
import json
import mmap
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from gitvow.request import Request
from gitvow_proxy.replay import flowfile
from gitvow_proxy.replay.inputs import Seen, seen_from_fields, seen_from_flow

#: Files with fewer records than this are read in one process.
PARALLEL_MIN_RECORDS = 4000
#: Records per piece handed to a worker (small enough to keep both cores busy to the end).
CHUNK_RECORDS = 2000
_BOM = b"\xef\xbb\xbf"



def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers_for(records: int, workers: int | None) -> int:
    if workers is not None:
        return max(1, workers)
    return 1 if records < PARALLEL_MIN_RECORDS else cores()


def read(path: Path, workers: int | None = None) -> list[Seen] | None:
    """Every flow of ``path`` in file order, or None when the fast path cannot read it."""
    with path.open("rb") as fo:
        head = fo.read(4)
        if head.startswith(b"{") or head.startswith(_BOM + b"{"):
            return _read_har(fo, workers)
        if not head:
            return []
        with mmap.mmap(fo.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                records = flowfile.spans(data)  # type: ignore[arg-type]
                count = workers_for(len(records), workers)
                if count == 1:
                    return _seen_of(data, records, 0)  # type: ignore[arg-type]
            except Exception:
                return None
    pieces = [records[i:i + CHUNK_RECORDS] for i in range(0, len(records), CHUNK_RECORDS)]
    firsts = list(range(0, len(records), CHUNK_RECORDS))
    return _map(_read_piece, [(str(path), piece, first) for piece, first in zip(pieces, firsts, strict=True)], count)


def _seen_of(data: bytes, records: Sequence[tuple[int, int]], first: int) -> list[Seen]:
    out = []
    for index, (start, end) in enumerate(records, first):
        item = seen_from_fields(data, index, flowfile.fields(data, start, end))
        if item is not None:
            out.append(item)
    return out


def _read_piece(job: tuple[str, list[tuple[int, int]], int]) -> list[Packed]:
    path, records, first = job
    with open(path, "rb") as fo, mmap.mmap(fo.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return [pack(item) for item in _seen_of(data, records, first)]  # type: ignore[arg-type]


#: A :class:`Seen` as plain values, which cross between processes at a third of the cost.
Packed = tuple[Any, ...]


def pack(item: Seen) -> Packed:
    request = item.request
    fields = None if request is None else (request.method, request.host, request.path, request.query,
                                           request.headers, request.body, request.port, request.scheme)
    return item.index, fields, item.time, item.user, item.client, item.meta


def unpack(packed: Packed) -> Seen:
    index, fields, time, user, client, meta = packed
    request = None
    if fields is not None:
        method, host, path, query, headers, body, port, scheme = fields
        request = Request(method, host, path, query, headers, body, port, scheme)
    return Seen(index, request, time, user, client, meta)


def _read_har(fo: Any, workers: int | None) -> list[Seen] | None:
    """A HAR file the way ``FlowReader`` reads it (JSON, then mitmproxy's ``request_to_flow``
    for each entry), the entries shared out among the workers."""
    try:
        fo.seek(0)
        raw = fo.read()
        entries = json.loads((raw[3:] if raw.startswith(_BOM) else raw).decode("utf-8"))["log"]["entries"]
        if not isinstance(entries, list):
            return None
        count = workers_for(len(entries), workers)
        if count == 1:
            return _har_seen((entries, 0))
    except Exception:
        return None
    global _ENTRIES
    if _fork():  # the workers inherit the parsed entries: none is pickled on the way there
        _ENTRIES = entries
        jobs: list[tuple[list[Any] | None, int, int]] = [
            (None, i, i + CHUNK_RECORDS) for i in range(0, len(entries), CHUNK_RECORDS)]
    else:
        jobs = [(entries[i:i + CHUNK_RECORDS], i, 0) for i in range(0, len(entries), CHUNK_RECORDS)]
    try:
        return _map(_har_piece, jobs, count)
    finally:
        _ENTRIES = []


#: The HAR entries being read, for forked workers.
_ENTRIES: list[Any] = []


def _har_piece(job: tuple[list[Any] | None, int, int]) -> list[Packed]:
    entries, first, stop = job
    return [pack(item) for item in _har_seen((_ENTRIES[first:stop] if entries is None else entries, first))]


def _har_seen(job: tuple[list[Any], int]) -> list[Seen]:
    from mitmproxy.io.har import request_to_flow

    entries, first = job
    out = []
    for index, entry in enumerate(entries, first):
        item = seen_from_flow(index, request_to_flow(entry))
        if item is not None:
            out.append(item)
    return out


def _fork() -> bool:
    """Whether workers are forked: they start with gitvow and mitmproxy imported and the
    parent's data in place (elsewhere they are spawned, and what they read is sent)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _map[A](work: Callable[[A], list[Packed]], jobs: list[A], count: int) -> list[Seen] | None:
    """``work`` over ``jobs`` in ``count`` processes, the results unpacked in order as they come
    (while the workers read on); None on any failure."""
    context = multiprocessing.get_context("fork" if _fork() else "spawn")
    # A forked worker's garbage collector would walk (and so copy) every object of the parent;
    # frozen, they are left alone.
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=min(count, len(jobs)), mp_context=context) as pool:
            return [unpack(item) for part in pool.map(work, jobs) for item in part]
    except Exception:  # a worker that fails: FlowReader reads the file again and says why
        return None
    finally:
        gc.unfreeze()
