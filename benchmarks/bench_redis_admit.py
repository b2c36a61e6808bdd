"""CPU per budget admission on Redis: the thread's ``admit`` against the loop's ``admit_async``.

Run: ``python benchmarks/bench_redis_admit.py [--admissions 3000] [--rounds 4] [--concurrency 1,4]
[--against REV] [--no-hiredis]``

What a budgeted write costs the proxy's process to be admitted, driven from an event loop as
mitmproxy drives it: ``thread`` hands each ``RedisStore.admit`` to a one-thread executor and
awaits it (what the proxy did before issue 22's fast writes), ``loop`` awaits
``RedisStore.admit_async`` on the loop itself (its own connection and protocol, no thread).
``--against REV`` adds ``before``: ``admit_async`` of the ``redis_store.py`` of git revision
``REV`` (loaded as a module of its own beside this one), measured in the same run, interleaved.
Each admission is what the proxy sends for a comment under ``[budget] writes``: the run-time
flags it saw and two windows (the agent's writes, the operation's), one ``EVALSHA``.
``--concurrency`` admissions are in flight at once (1: one after another, the CPU of one
admission; 4: a busy proxy). The
figures: the process's CPU (every thread) per admission in µs, wall time per admission, and
``redis-server``'s own CPU per admission (another process, counted apart). Rounds alternate
the ways; the median is printed. A ``redis-server`` is started for the run
(``gitvow_proxy.testing.RedisServer``). Nothing is asserted: ``test_bench_redis_admit_runs``
only checks that the script works.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

KEYS = [("budget:bench:writes", 10**9), ("budget:bench:op:issue.comment", 10**9)]
WINDOW = 3600.0


def _server_cpu(pid: int) -> float:
    """``redis-server``'s CPU seconds so far (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _round(admit: Callable[[], Awaitable[Any]], admissions: int, concurrency: int) -> tuple[float, float]:
    """(process CPU seconds, wall seconds) for ``admissions`` admissions, ``concurrency`` at a time."""
    left = admissions

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await admit()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.process_time() - cpu, time.perf_counter() - wall


def _store_at(revision: str) -> Any:
    """The ``RedisStore`` class of ``redis_store.py`` as it was at git revision ``revision``."""
    import importlib.util
    import subprocess

    source = subprocess.run(["git", "show", f"{revision}:enforcement/gitvow-proxy/src/gitvow_proxy/store/redis_store.py"],
                            cwd=Path(__file__).parent, check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("gitvow_proxy.store._redis_store_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, f"{revision}:redis_store.py", "exec"), module.__dict__)
    return module.RedisStore


def run(admissions: int, rounds: int, concurrencies: list[int], workdir: Path,
        against: str | None = None) -> dict[str, dict[str, float]]:
    """``"WAY/cN"`` → median ``cpu_us``, ``wall_us`` and ``server_us`` per admission."""
    from gitvow_proxy.store.redis_store import RedisStore
    from gitvow_proxy.testing import RedisServer

    server = RedisServer(workdir / "redis").start()
    assert server.proc is not None
    store = RedisStore(server.url)
    previous = _store_at(against)(server.url) if against else None
    samples: dict[str, list[tuple[float, float, float]]] = {}
    try:
        seen = store.all_flags()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitvow-store")

        async def main() -> None:
            loop = asyncio.get_running_loop()
            ways: dict[str, Callable[[], Awaitable[Any]]] = {
                "thread": lambda: loop.run_in_executor(executor, store.admit, seen, KEYS, time.time(), WINDOW),
                "loop": lambda: store.admit_async(seen, KEYS, time.time(), WINDOW),
            }
            if previous is not None:
                ways["before"] = lambda: previous.admit_async(seen, KEYS, time.time(), WINDOW)
            for way in ways.values():  # warm: connections made, the script loaded, code paths hot
                await _round(way, 50, max(concurrencies))
            for index in range(rounds):
                order = list(ways) if index % 2 == 0 else list(reversed(ways))
                for concurrency in concurrencies:
                    for name in order:
                        store._redis.delete(*("gitvow:ev:" + key for key, _ in KEYS))  # the same window size each round
                        before = _server_cpu(server.proc.pid)  # type: ignore[union-attr]
                        cpu, wall = await _round(ways[name], admissions, concurrency)
                        spent = _server_cpu(server.proc.pid) - before  # type: ignore[union-attr]
                        samples.setdefault(f"{name}/c{concurrency}", []).append((cpu, wall, spent))

        asyncio.run(main())
        executor.shutdown()
    finally:
        store.close()
        if previous is not None:
            previous.close()
        server.stop()
    per = 1e6 / admissions
    return {key: {"cpu_us": statistics.median(s[0] for s in rows) * per,
                  "wall_us": statistics.median(s[1] for s in rows) * per,
                  "server_us": statistics.median(s[2] for s in rows) * per}
            for key, rows in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--admissions", type=int, default=3000, help="admissions per round and way")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", default="1,4", help="admissions in flight at once, comma separated")
    parser.add_argument("--against", metavar="REV", help="also measure admit_async of redis_store.py at this git revision")
    parser.add_argument("--no-hiredis", action="store_true", help="redis-py's Python parser even where hiredis is installed")
    args = parser.parse_args(argv)
    if args.no_hiredis:
        sys.modules["hiredis"] = None  # type: ignore[assignment]  # redis-py then finds it missing
    with tempfile.TemporaryDirectory() as tmp:
        results = run(args.admissions, args.rounds, [int(c) for c in args.concurrency.split(",")], Path(tmp),
                      args.against)
    import redis

    parser_name = "hiredis" if redis.utils.HIREDIS_AVAILABLE else "python"
    print(f"{args.admissions} admissions x {args.rounds} rounds; redis-py {redis.__version__} ({parser_name} parser); "
          "load " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'way':<12} {'CPU µs':>8} {'wall µs':>8} {'server µs':>10}")
    for key, row in results.items():
        print(f"{key:<12} {row['cpu_us']:8.1f} {row['wall_us']:8.1f} {row['server_us']:10.1f}")
    return 0


def test_bench_redis_admit_runs(tmp_path: Path) -> None:
    """The script works end to end (figures are never asserted)."""
    from gitvow_proxy.testing import REDIS_SERVER

    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis")
    results = run(20, 1, [1, 2], tmp_path)
    assert set(results) == {f"{way}/c{n}" for way in ("thread", "loop") for n in (1, 2)}
    assert all(row["cpu_us"] > 0 and row["wall_us"] > 0 for row in results.values())


if __name__ == "__main__":
    sys.exit(main())
