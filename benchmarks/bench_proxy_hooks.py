"""gitvow's own CPU per request: the proxy's addon chain on mitmproxy flows, without the network.

Run: ``python benchmarks/bench_proxy_hooks.py [--requests 3000] [--profile]``

``bench_proxy.py`` measures ``gitvow proxy`` against a mitmproxy passthrough with the same
protocol addons; the difference is what gitvow's addons do per request. This script measures
that part alone: the chain ``gitvow proxy`` holds (:func:`gitvow_proxy.addons.gitvow_addon`),
under the benchmark's policy (a GitHub Enterprise style host, one agent, a ``[budget]``, a
SQLite state file, an audit log), called for each hook mitmproxy calls on a request
(``requestheaders``, ``request``, ``responseheaders``, ``response``) on flows built
beforehand, so the figure holds gitvow's work only. ``--profile`` adds cProfile's view of
gitvow's functions (cumulative; cProfile slows every call several times, so read it as
shares; ``BENCH_SORT`` and ``BENCH_FILTER`` change its order and filter). The figure is the
whole process's CPU, so work a hook leaves to a thread is counted too. The flows follow each
other with no pause, so the SQLite budget's batches (written on a 20 ms timer in the proxy)
are written when 1,024 units wait: read the write figure as the decision plus a share of
one transaction per batch.
Nothing is asserted: ``test_bench_proxy_hooks_runs`` only checks that the script works.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import gc
import inspect
import json
import os
import pstats
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

AGENT, SECRET, TOKEN = "bench", "bench-secret", "ghs_benchtoken0123456789"
NETLOC = "127.0.0.1:4443"
GRAPHQL = json.dumps({"query": 'query { repository(owner: "team", name: "app") { pullRequests(first: 5) { nodes { number title } } } }'}).encode()
WORKLOADS = {
    "rest": ("GET", "/api/v3/repos/team/app/pulls", b""),
    "graphql": ("POST", "/api/graphql", GRAPHQL),
    "write": ("POST", "/api/v3/repos/team/app/issues/1/comments", json.dumps({"body": "a benchmark comment"}).encode()),
}
REPLY = json.dumps([{"number": n, "title": f"pull request {n}"} for n in range(5)]).encode()


def _policy(workdir: Path) -> Path:
    path = workdir / "policy.toml"
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "{NETLOC}" = "github"
        [credentials.github]
        token_env = "BENCH_GITHUB_TOKEN"
        [agents.{AGENT}]
        mode = "issues_and_prs"
        secret_env = "BENCH_AGENT_SECRET"
        [budget]
        writes = 1000000000
        [proxy]
        state = "{workdir / 'state.sqlite'}"
        [audit]
        path = "{workdir / 'audit.jsonl'}"
    """))
    return path


def _flow(method: str, path: str, body: bytes) -> Any:
    from mitmproxy import http
    from mitmproxy.test import tflow

    flow = tflow.tflow()
    auth = "Basic " + base64.b64encode(f"{AGENT}:{SECRET}".encode()).decode()
    flow.request = http.Request.make(method, f"https://{NETLOC}{path}", body, {
        "Host": NETLOC, "Authorization": "token agent-placeholder", "Content-Type": "application/json",
        "Proxy-Authorization": auth, "Accept": "*/*", "User-Agent": "python-httpx"})
    return flow


async def _fire(result: Any) -> None:
    if inspect.isawaitable(result):
        await result


async def _measure(workdir: Path, requests: int, profile: bool) -> dict[str, float]:
    from mitmproxy.test import taddons, tutils

    from gitvow_proxy.addons import gitvow_addon
    from gitvow_proxy.shared import Shared

    shared = Shared()
    chain = gitvow_addon(shared)
    results: dict[str, float] = {}
    with taddons.context(chain) as tctx:
        tctx.configure(chain, gitvow_policy=str(_policy(workdir)), confdir=str(workdir / "conf"))

        async def one(flow: Any, response: Any) -> None:
            await _fire(chain.requestheaders(flow))
            await _fire(chain.request(flow))
            if flow.response is not None:
                raise RuntimeError(f"refused: {flow.response.status_code} {flow.response.headers.get('x-gitvow-reason')}")
            flow.response = response
            await _fire(chain.responseheaders(flow))
            await _fire(chain.response(flow))

        for workload, (method, path, body) in WORKLOADS.items():
            for _ in range(min(200, requests)):  # warm-up: caches filled, the flags read once
                await one(_flow(method, path, body), tutils.tresp(content=REPLY))
            flows = [(_flow(method, path, body), tutils.tresp(content=REPLY)) for _ in range(requests)]
            # The flows built beforehand would otherwise be traversed by every full collection
            # while the clock runs, a cost the proxy (whose flows live for one request) never
            # has; it freezes what it holds at start the same way (gitvow_proxy.run).
            gc.collect()
            gc.freeze()
            profiler = cProfile.Profile() if profile else None
            started = time.process_time()
            if profiler is not None:
                profiler.enable()
            for flow, response in flows:
                await one(flow, response)
            if profiler is not None:
                profiler.disable()
            results[workload] = (time.process_time() - started) / requests * 1e6
            del flows
            gc.unfreeze()
            if profiler is not None:
                print(f"-- {workload}: gitvow's functions, cumulative")
                pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(os.environ.get("BENCH_FILTER", "gitvow"), 30)
    shared.tally.stop()
    return results


def run(requests: int, workdir: Path, profile: bool = False) -> dict[str, float]:
    """Microseconds of CPU (the whole process) per request, per workload."""
    os.environ.setdefault("BENCH_GITHUB_TOKEN", TOKEN)
    os.environ.setdefault("BENCH_AGENT_SECRET", SECRET)
    return asyncio.run(_measure(workdir, requests, profile))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=3000, help="requests per workload")
    parser.add_argument("--profile", action="store_true", help="also print cProfile's view of gitvow's functions")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-hooks-") as workdir:
        results = run(args.requests, Path(workdir), args.profile)
    print(f"gitvow's addon chain, CPU µs per request ({args.requests} requests each); load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for workload, micros in results.items():
        print(f"{workload:<8} {micros:8.1f}")
    return 0


def test_bench_proxy_hooks_runs(tmp_path: Path) -> None:
    """The script works end to end (figures are never asserted)."""
    pytest.importorskip("gitvow_github")
    results = run(20, tmp_path)
    assert set(results) == set(WORKLOADS) and all(v > 0 for v in results.values())
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert {line["verdict"] for line in lines} == {"allow"} and len(lines) == 3 * 40


if __name__ == "__main__":
    sys.exit(main())
