"""What gitvow does after a request is decided, per request: the audit addon and the scrub.

Run: ``python benchmarks/bench_after_decision.py [--requests 3000] [--repeat 1]``

``bench_proxy_hooks.py`` measures the whole addon chain; this script measures its tail alone:
the audit addon's hooks (cleaning host, path and repository of every secret and canary, the
metrics count, the cluster tally, the audit line written to its file) and the scrub/record
addon's response hook (the injected credential looked for in the response), on flows the real
chain decided beforehand under ``bench_proxy_hooks``'s policy. Each flow's decision is handed
to the hooks unwritten, as the chain hands it. To compare with an older tree, put the older
``enforcement/gitvow-proxy/src`` first on ``PYTHONPATH``. Nothing is asserted:
``test_bench_after_decision_runs`` only checks that the script works.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import bench_proxy_hooks as hooks


async def _measure(workdir: Path, requests: int, repeat: int) -> dict[str, float]:
    from mitmproxy.test import taddons, tutils

    from gitvow_proxy.addons import gitvow_addon
    from gitvow_proxy.addons.decision_audit import DecisionAudit
    from gitvow_proxy.addons.scrub_and_record import ScrubAndRecord
    from gitvow_proxy.flow_metadata import AUDIT_KEY
    from gitvow_proxy.shared import Shared

    shared = Shared()
    chain = gitvow_addon(shared)
    audit, scrubber = DecisionAudit(shared), ScrubAndRecord(shared)
    results: dict[str, float] = {}
    with taddons.context(chain) as tctx:
        tctx.configure(chain, gitvow_policy=str(hooks._policy(workdir)), confdir=str(workdir / "conf"))
        for workload, (method, path, body) in hooks.WORKLOADS.items():
            warm = min(200, requests)
            flows: list[Any] = []
            for _ in range(warm + requests):
                flow = hooks._flow(method, path, body)
                await hooks._fire(chain.requestheaders(flow))
                await hooks._fire(chain.request(flow))
                if flow.response is not None:
                    raise RuntimeError(f"refused: {flow.response.headers.get('x-gitvow-reason')}")
                decided = copy.copy(flow.metadata[AUDIT_KEY])
                decided.written = False  # as the chain hands it to the audit addon
                flow.metadata[AUDIT_KEY] = decided
                flow.response = tutils.tresp(content=hooks.REPLY)
                flows.append(flow)
            for flow in flows[:warm]:
                audit.request(flow)
                scrubber.response(flow)
            gc.collect()
            started = time.process_time()
            for flow in [flow for _ in range(repeat) for flow in flows[warm:]]:
                flow.metadata[AUDIT_KEY].written = False  # a repeat writes its line again
                audit.requestheaders(flow)
                audit.request(flow)
                scrubber.response(flow)
                audit.response(flow)
            results[workload] = (time.process_time() - started) / (requests * repeat) * 1e6
    shared.tally.stop()
    return results


def run(requests: int, workdir: Path, repeat: int = 1) -> dict[str, float]:
    """Microseconds of CPU per request after the decision, per workload."""
    os.environ.setdefault("BENCH_GITHUB_TOKEN", hooks.TOKEN)
    os.environ.setdefault("BENCH_AGENT_SECRET", hooks.SECRET)
    return asyncio.run(_measure(workdir, requests, repeat))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=3000, help="requests per workload")
    parser.add_argument("--repeat", type=int, default=1, help="run the measured hooks over the same flows this many "
                        "times (under valgrind, two runs differing only in --repeat give instructions per request)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-after-") as workdir:
        results = run(args.requests, Path(workdir), args.repeat)
    print(f"after the decision (audit addon, scrub), CPU µs per request ({args.requests} requests each); load "
          "average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for workload, micros in results.items():
        print(f"{workload:<8} {micros:8.1f}")
    return 0


def test_bench_after_decision_runs(tmp_path: Path) -> None:
    """The script works end to end (figures are never asserted): every decision has its line,
    once from the chain and once from the measured hooks."""
    pytest.importorskip("gitvow_github")
    results = run(20, tmp_path)
    assert set(results) == set(hooks.WORKLOADS) and all(v > 0 for v in results.values())
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 3 * 40


if __name__ == "__main__":
    sys.exit(main())
