"""``gitvow replay`` throughput on recorded GitHub REST traffic: read + re-decide + compare.

A flow file of recorded REST requests is written the way ``gitvow proxy --record`` writes it
(mitmproxy's ``FlowWriter``, the decision in the flow's metadata), then replayed whole:
mitmproxy's readers, the proxy's engine and gates under the new policy (every live gate:
run-state, write surface, repository filter, canary scan of each body, write counters, the
budget), grouping of the changes. Two cases: against the recorded decisions (one decision
per request) and ``--against`` a policy file (two). The same recording is also replayed as
mitmproxy's HAR export of it and as the audit log the proxy would have written, in the same
run. Files this large are read by one process per core (``gitvow_proxy.replay.parallel``);
the "one process" rows read them in the replaying process alone.

- ``python benchmarks/bench_replay.py [--requests 50000] [--rounds 5]`` prints the docs/benchmarks.md
  figures: requests per second of wall-clock time (median and best of the rounds), and per
  CPU-second of all the processes (the replaying one and its readers), which is what one
  free core would give; on a loaded machine the wall clock says more about the load.
- ``pytest benchmarks/bench_replay.py --benchmark-only`` runs it under pytest-benchmark; the
  ``all`` tox env runs it once with ``--benchmark-disable`` so it stays correct. Timings are
  never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("gitvow_github")
pytest.importorskip("gitvow_proxy")

from mitmproxy import connection, http
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.io import FlowReader, FlowWriter

from gitvow.plugins import installed
from gitvow_proxy.record import METADATA_KEY
from gitvow_proxy.replay import load, replay
from gitvow_proxy.replay.inputs import Recorded

HOST = "ghes.example.test"
API = "/api/v3/repos/team/app"
#: method, path, body, operation, recorded verdict for coder (issues_and_prs)
TRAFFIC = [
    ("GET", f"{API}", b"", "read", "allow"),
    ("GET", f"{API}/pulls?state=open&per_page=100", b"", "read", "allow"),
    ("GET", f"{API}/issues/7/comments", b"", "read", "allow"),
    ("POST", f"{API}/issues/7/comments", b'{"body":"Looks right to me; merging after CI."}', "issue.comment", "allow"),
    ("POST", f"{API}/issues", b'{"title":"flaky test","body":"It fails one run in ten."}', "issue.create", "allow"),
    ("PATCH", f"{API}/issues/7", b'{"state":"closed"}', "issue.edit", "allow"),
    ("POST", f"{API}/issues/7/labels", b'{"labels":["bug"]}', "label.add", "allow"),
    ("GET", f"{API}/contents/README.md", b"", "read", "allow"),
]

OLD = """
[hosts]
"{host}" = "github"

[agents.coder]
mode = "issues_and_prs"
secret_env = "UNSET"

[agents.reader]
mode = "advisory"
secret_env = "UNSET"

[budget]
window_seconds = 3600
writes = 100000
"""
#: The change under test: the reader may comment, and comments on team/app are capped.
NEW = OLD.replace('mode = "advisory"', 'mode = "issues_only"') + '\n[write_surface]\nlanes = {{ talk = ["issue.*"] }}\nagents = {{ reader = "talk" }}\n'


def write_recording(path: Path, count: int) -> None:
    """``count`` REST requests from two agents, a tenth of a second apart."""
    client = connection.Client(peername=("127.0.0.1", 50000), sockname=("127.0.0.1", 8080), timestamp_start=0.0)
    server = connection.Server(address=(HOST, 443))
    start = 1_764_000_000.0
    with path.open("wb") as fo:
        writer = FlowWriter(fo)  # type: ignore[no-untyped-call]
        for i in range(count):
            method, target, body, operation, verdict = TRAFFIC[i % len(TRAFFIC)]
            agent = "reader" if i % 4 == 3 else "coder"
            if agent == "reader" and method != "GET":
                verdict = "deny"
            flow = http.HTTPFlow(client, server)
            flow.request = http.Request.make(method, f"https://{HOST}{target}", body,
                                             {"content-type": "application/json", "user-agent": "gh/2.46"})
            flow.request.timestamp_start = start + i / 10
            flow.response = http.Response.make(200 if verdict == "allow" else 403, b"")
            flow.metadata[METADATA_KEY] = {
                "agent": agent, "verdict": verdict, "reason": None if verdict == "allow" else "mode_denied",
                "stage": "forward" if verdict == "allow" else "policy", "operations": [operation],
                "repo": "team/app", "policy": {"path": "old.toml", "sha256": ""}, "body_withheld": False,
            }
            writer.add(flow)


class Setup:
    def __init__(self, directory: Path, count: int) -> None:
        self.recording = directory / "recorded.flows"
        self.old, self.new = directory / "old.toml", directory / "new.toml"
        self.old.write_text(textwrap.dedent(OLD.format(host=HOST)))
        self.new.write_text(textwrap.dedent(NEW.format(host=HOST)))
        write_recording(self.recording, count)
        self.plugins = installed()
        self.count = count
        # reader (every 4th request): its issue.comment, issue.create, issue.edit become allowed
        self.expected_flips = sum(1 for i in range(3, count, 4) if TRAFFIC[i % len(TRAFFIC)][3].startswith("issue."))

    def run(self, *, against: bool, workers: int | None = None) -> int:
        report = replay(load([self.recording], workers=workers), self.new, self.old if against else None,
                        plugins=self.plugins)
        assert report.requests == self.count
        return report.flips


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("replay"), 2000)


@pytest.mark.parametrize("against", [False, True], ids=["as-recorded", "against-policy"])
def test_replay(benchmark, setup: Setup, against: bool) -> None:  # type: ignore[no-untyped-def]
    flips = benchmark(setup.run, against=against)
    # the reader's issue writes are now allowed (its label.add is outside its lane)
    assert flips == setup.expected_flips


def test_short_script_run() -> None:
    """The script's own path, in a few thousand requests, so it keeps working."""
    proc = subprocess.run([sys.executable, __file__, "--requests", "800", "--rounds", "1", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert set(figures) >= {"flow file, as recorded", "audit log, as recorded", "HAR (mitmproxy's export), --against"}


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the reader pool's)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _rate(count: int, work: Callable[[], object], rounds: int) -> dict[str, int]:
    """Requests per second over ``rounds``: wall clock (median, best) and per CPU-second of all
    processes (median)."""
    wall, cpu = [], []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), _cpu()
        work()
        wall.append(count / (time.perf_counter() - started))
        cpu.append(count / max(_cpu() - started_cpu, 1e-9))
    return {"median": round(statistics.median(wall)), "best": round(max(wall)), "per_cpu": round(statistics.median(cpu))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp), args.requests)
        items = load([setup.recording])
        audit = Path(tmp) / "audit.jsonl"
        audit.write_text("".join(_audit_line(item) for item in items))
        har = Path(tmp) / "recorded.har"
        with setup.recording.open("rb") as fo:
            har.write_text(json.dumps(SaveHar().make_har(list(FlowReader(fo).stream()))))  # type: ignore[no-untyped-call]
        n = args.requests
        results = {
            "flow file, as recorded": _rate(n, lambda: setup.run(against=False), args.rounds),
            "flow file, --against": _rate(n, lambda: setup.run(against=True), args.rounds),
            "flow file, as recorded, one process": _rate(n, lambda: setup.run(against=False, workers=1), args.rounds),
            "  of which reading": _rate(n, lambda: load([setup.recording]), args.rounds),
            "  of which reading, one process": _rate(n, lambda: load([setup.recording], workers=1), args.rounds),
            "  reading through mitmproxy's Flow objects (before)": _rate(n, lambda: _flow_objects(setup.recording),
                                                                         args.rounds),
            "  of which deciding, as recorded": _rate(
                n, lambda: replay(items, setup.new, None, plugins=setup.plugins), args.rounds),
            "HAR (mitmproxy's export), --against": _rate(
                n, lambda: replay(load([har], agent="coder"), setup.new, setup.old, plugins=setup.plugins), args.rounds),
            "HAR, --against, one process": _rate(
                n, lambda: replay(load([har], agent="coder", workers=1), setup.new, setup.old, plugins=setup.plugins),
                args.rounds),
            "audit log, as recorded": _rate(
                n, lambda: replay(load([audit]), setup.new, None, plugins=setup.plugins), args.rounds),
        }
    load_average = os.getloadavg()
    if args.json:
        print(json.dumps(results | {"load average": {"median": round(load_average[0], 2)}}))
        return
    print(f"{n} recorded REST requests, {args.rounds} rounds, {len(os.sched_getaffinity(0))} cores, "
          f"load average {load_average[0]:.2f}: requests/s wall median (best), per CPU-second")
    for name, figures in results.items():
        print(f"{name:<52} {figures['median']:>7} ({figures['best']})  {figures['per_cpu']:>7}/cpu-s")


def _flow_objects(path: Path) -> int:
    """Reading as replay did before: ``FlowReader`` building every ``Flow``."""
    with path.open("rb") as fo:
        return sum(1 for _ in FlowReader(fo).stream())


def _audit_line(item: Recorded) -> str:
    """The audit line the proxy wrote for ``item`` (as ``gitvow_proxy.audit`` formats it)."""
    assert item.recorded is not None
    request, recorded = item.request, item.recorded
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(item.time)) + f".{int(item.time * 1000) % 1000:03d}Z"
    return json.dumps({"time": stamp, "agent": item.agent, "host": f"{request.host}:{request.port}",
                       "method": request.method, "path": request.path, "operations": list(recorded.operations),
                       "repo": recorded.repo, "verdict": recorded.verdict, "reason": recorded.reason,
                       "stage": recorded.stage, "latency_ms": 0.1}, separators=(",", ":")) + "\n"


if __name__ == "__main__":
    main()
