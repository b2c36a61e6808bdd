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
more than it saves. Anything this cannot read raises :class:`Unreadable`, saying why, in one
line: a length prefix that runs past the end of the file is refused before anything is read
(mitmproxy's ``FlowReader`` would first allocate what it announces), and a value nested
deeper than Python's parsers recurse is refused, not a crash.
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

#: Files with fewer records than this are read in one process (``GITVOW_REPLAY_PARALLEL_MIN``
#: overrides it: a machine where processes start faster, or a test that needs no large file).
PARALLEL_MIN_RECORDS = 4000
_MIN_VARIABLE = "GITVOW_REPLAY_PARALLEL_MIN"
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
    threshold = os.environ.get(_MIN_VARIABLE, "")
    least = int(threshold) if threshold.isdigit() else PARALLEL_MIN_RECORDS
    return 1 if records < least else cores()


class Unreadable(Exception):
    """A file that is not a flow file or HAR file this reader can read; the message says why."""


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "a value is nested deeper than a recording's are"
    if isinstance(exc, MemoryError):
        return "a value is too large to read"
    text = " ".join(str(exc).split())
    return text if isinstance(exc, (ValueError, Unreadable)) else f"{type(exc).__name__}: {text}"


def read(path: Path, workers: int | None = None) -> list[Seen]:
    """Every flow of ``path`` in file order; :class:`Unreadable` when it cannot be read."""
    with path.open("rb") as fo:
        head = fo.read(4)
        if head.startswith(b"{") or head.startswith(_BOM + b"{"):
            return _read_har(fo, workers)
        if not head:
            return []
        with mmap.mmap(fo.fileno(), 0, access=mmap.ACCESS_READ) as data:
            why = ""
            try:
                records = flowfile.spans(data)  # type: ignore[arg-type]
            except ValueError as exc:
                why = _why(exc)
            if why:
                raise Unreadable(why)
            count = workers_for(len(records), workers)
            if count == 1:
                return _seen_of(data, records, 0)  # type: ignore[arg-type]
    pieces = [records[i:i + CHUNK_RECORDS] for i in range(0, len(records), CHUNK_RECORDS)]
    firsts = list(range(0, len(records), CHUNK_RECORDS))
    jobs = [(str(path), piece, first) for piece, first in zip(pieces, firsts, strict=True)]
    seen = _map(_read_piece, jobs, count)
    if seen is None:  # the pool itself failed (not the file): read it here
        return [item for job in jobs for item in map(unpack, _read_piece(job))]
    return seen


def _seen_of(data: bytes, records: Sequence[tuple[int, int]], first: int) -> list[Seen]:
    out = []
    for index, (start, end) in enumerate(records, first):
        why = ""
        try:
            item = seen_from_fields(data, index, flowfile.fields(data, start, end))
        except Exception as exc:  # mitmproxy's parser and migration raise many kinds
            why = f"flow {index + 1} (byte {start}): {_why(exc)}"
        if why:
            # raised outside the handler: the parser's frames (views into the mapped file)
            # are released first, so the file can be unmapped
            raise Unreadable(why)
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


def _har_entries(raw: bytes) -> list[Any]:
    try:
        document = json.loads((raw[3:] if raw.startswith(_BOM) else raw).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Unreadable(f"a HAR file is UTF-8 JSON: {exc.reason} at byte {exc.start}") from None
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"not JSON: {_why(exc)}") from None
    log = document.get("log") if isinstance(document, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise Unreadable("a HAR file is a JSON object with a log.entries list")
    return entries


def _read_har(fo: Any, workers: int | None) -> list[Seen]:
    """A HAR file the way ``FlowReader`` reads it (JSON, then mitmproxy's ``request_to_flow``
    for each entry), the entries shared out among the workers."""
    fo.seek(0)
    entries = _har_entries(fo.read())
    count = workers_for(len(entries), workers)
    if count == 1:
        return _har_seen((entries, 0))
    global _ENTRIES
    if _fork():  # the workers inherit the parsed entries: none is pickled on the way there
        _ENTRIES = entries
        jobs: list[tuple[list[Any] | None, int, int]] = [
            (None, i, i + CHUNK_RECORDS) for i in range(0, len(entries), CHUNK_RECORDS)]
    else:
        jobs = [(entries[i:i + CHUNK_RECORDS], i, 0) for i in range(0, len(entries), CHUNK_RECORDS)]
    try:
        seen = _map(_har_piece, jobs, count)
    finally:
        _ENTRIES = []
    return seen if seen is not None else _har_seen((entries, 0))


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
        try:
            item = seen_from_flow(index, request_to_flow(entry))
        except Exception as exc:  # mitmproxy's HAR reader raises many kinds on a bad entry
            raise Unreadable(f"HAR entry {index + 1}: {_why(exc)}") from None
        if item is not None:
            out.append(item)
    return out


def _fork() -> bool:
    """Whether workers are forked: they start with gitvow and mitmproxy imported and the
    parent's data in place (elsewhere they are spawned, and what they read is sent)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _map[A](work: Callable[[A], list[Packed]], jobs: list[A], count: int) -> list[Seen] | None:
    """``work`` over ``jobs`` in ``count`` processes, the results unpacked in order as they come
    (while the workers read on); a worker's :class:`Unreadable` is raised here; None when the
    pool itself fails (a worker killed), so the caller reads in its own process."""
    context = multiprocessing.get_context("fork" if _fork() else "spawn")
    # A forked worker's garbage collector would walk (and so copy) every object of the parent;
    # frozen, they are left alone.
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=min(count, len(jobs)), mp_context=context) as pool:
            return [unpack(item) for part in pool.map(work, jobs) for item in part]
    except Unreadable:
        raise
    except Exception:  # the pool, not the file: a worker killed, no process to be had
        return None
    finally:
        gc.unfreeze()
