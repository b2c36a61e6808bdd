"""Proxy throughput: ``gitvow proxy`` (full pipeline + credential injection + audit) against a
mitmproxy passthrough holding the same protocol addons, in the same run, in front of the same
loopback upstream.

Run: ``python benchmarks/bench_proxy.py [--duration 5] [--rounds 3] [--clients 4] [--redis]``

The baseline, ``passthrough``, is mitmproxy's ``Master`` with exactly the protocol addons
``gitvow proxy`` runs (:func:`gitvow_proxy.run.lean_addons`: core, block, disable_h2c,
proxyserver, script, next_layer, tlsconfig, upstream_auth, errorcheck), built as ``gitvow
proxy`` builds its own (same options, same import footprint, ``gc.freeze``) and forwarding
everything: the baseline of the issue's goals. ``passthrough-O`` is the same under ``python
-O``, as ``gitvow proxy`` runs itself (:mod:`gitvow_proxy.optimised`: mitmproxy's per-message
type checks off): a ratio against it is gitvow's own work alone. Bare
``mitmdump --proxyauth`` (all its default addons) runs too, for comparison with earlier
figures (``--no-mitmdump`` drops it).
Every proxy runs at once; rounds alternate between them (ABBA) so machine noise hits all alike.
Workloads, on a GitHub Enterprise style host mapped to the ``github`` adapter:

- ``rest``: ``GET /api/v3/repos/team/app/pulls`` (read, allowed at advisory)
- ``graphql``: ``POST /api/graphql`` with a small query (read, parsed under limits)
- ``write``: ``POST …/issues/1/comments``, an allowed write that reads the run-time pauses,
  counts itself and takes from a ``[budget]``: every one reaches the state store

``--redis`` adds ``gitvow-redis``, ``gitvow`` with ``[proxy] state`` in a ``redis-server`` the
script starts (the other ``gitvow`` keeps its state in SQLite).

``--latency`` runs one client sending one request at a time, for the median latency each
proxy adds to the baseline. Clients are separate processes with keep-alive connections through the proxy; a ``direct``
row (no proxy) shows the clients and the upstream are not what limits the figures. The
result is printed as a table and, with ``--json FILE``, written as JSON. Nothing is asserted:
``test_bench_proxy_runs`` only checks that the script works (a second of traffic).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitvow.testing import RecordingServer, Reply, Seen, free_port, wait_for_port

BIN = Path(sys.executable).parent
AGENT, SECRET, TOKEN = "bench", "bench-secret", "ghs_benchtoken0123456789"
GRAPHQL = json.dumps({"query": 'query { repository(owner: "team", name: "app") { pullRequests(first: 5) { nodes { number title } } } }'}).encode()
WORKLOADS = {
    "rest": ("GET", "/api/v3/repos/team/app/pulls", b""),
    "graphql": ("POST", "/api/graphql", GRAPHQL),
    "write": ("POST", "/api/v3/repos/team/app/issues/1/comments", json.dumps({"body": "a benchmark comment"}).encode()),
}
#: The baseline every ratio is taken against: mitmproxy as it comes, with gitvow's protocol addons.
BASE = "passthrough"
#: The second baseline: the same under ``python -O``, as ``gitvow proxy`` runs itself
#: (:mod:`gitvow_proxy.optimised`); a ratio against it is gitvow's own work alone.
QUICK = "passthrough-O"
REPLY = json.dumps([{"number": n, "title": f"pull request {n}"} for n in range(5)]).encode()


# -- upstream (its own process) ------------------------------------------------------------

def serve_upstream(cert_dir: Path) -> None:
    """The upstream: prints its port, then answers every request with the same JSON.
    Touches ``cert_dir/auth-seen`` once it has seen the injected token."""
    marker = cert_dir / "auth-seen"

    def reply(seen: Seen) -> Reply:
        if seen.headers.get("authorization") == f"Bearer {TOKEN}" and not marker.exists():
            marker.touch()
        return 200, {"Content-Type": "application/json"}, REPLY

    server = RecordingServer(reply, certfile=cert_dir / "server.pem", record=False)
    print(server.port, flush=True)
    server.serve_forever()


# -- the passthrough (its own process) -----------------------------------------------------

def serve_passthrough(port: int, confdir: Path, upstream_ca: Path) -> None:
    """mitmproxy's ``Master`` with the protocol addons ``gitvow proxy`` holds and nothing else,
    built as :func:`gitvow_proxy.run.serve` builds the proxy: the baseline of every ratio.
    Started under ``python -O`` it is the second baseline, against which a ratio is gitvow's
    own work alone."""
    import asyncio
    import gc
    import logging

    from mitmproxy import options
    from mitmproxy.master import Master

    from gitvow_proxy.run import lean_addons

    async def main() -> None:
        logging.getLogger().setLevel(logging.DEBUG)
        for noisy in ("tornado", "asyncio", "hpack", "quic"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        opts = options.Options(listen_host="127.0.0.1", listen_port=port, confdir=str(confdir))
        master = Master(opts, with_termlog=True)
        master.addons.add(*lean_addons())  # type: ignore[no-untyped-call]
        opts.update(connection_strategy="lazy", ssl_verify_upstream_trusted_ca=str(upstream_ca))  # type: ignore[no-untyped-call]
        gc.collect()
        gc.freeze()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, master.shutdown)
        await master.run()

    asyncio.run(main())


# -- load generator (its own processes) ----------------------------------------------------

def run_client(proxy: str, cafile: str, url: str, method: str, body: bytes, seconds: float, threads: int) -> None:
    """One load-generating process: connects, prints ``ready``, waits for a line on stdin,
    runs for ``seconds`` and prints ``<ok> <errors> <median latency in µs>``."""
    import httpx

    headers = {"Authorization": "token agent-placeholder", "Content-Type": "application/json"}
    clients = [httpx.Client(proxy=proxy or None, verify=ssl.create_default_context(cafile=cafile), timeout=30)
               for _ in range(threads)]
    for client in clients:  # connect (CONNECT + TLS) before the clock starts
        client.request(method, url, content=body or None, headers=headers).raise_for_status()
    done = [0] * threads
    errors = [0] * threads
    took: list[list[float]] = [[] for _ in range(threads)]
    print("ready", flush=True)
    sys.stdin.readline()
    deadline = time.monotonic() + seconds

    def loop(i: int) -> None:
        client = clients[i]
        while time.monotonic() < deadline:
            started = time.perf_counter()
            r = client.request(method, url, content=body or None, headers=headers)
            took[i].append(time.perf_counter() - started)
            if r.status_code == 200:
                done[i] += 1
            else:
                errors[i] += 1

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for client in clients:
        client.close()
    latencies = [t for per_thread in took for t in per_thread]
    print(sum(done), sum(errors), 1e6 * statistics.median(latencies) if latencies else 0.0, flush=True)


def _myself(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(proxy: str | None, cafile: str, url: str, method: str, body: bytes, seconds: float, clients: int,
            pid: int | None = None, threads: int = 2) -> tuple[float, float, float]:
    """Requests per second over ``seconds`` with ``clients`` processes of ``threads`` threads
    each, the CPU milliseconds process ``pid`` (the proxy) spent per request meanwhile, and the
    median latency of a request in milliseconds."""
    procs = [
        subprocess.Popen(
            _myself("--client", proxy or "", cafile, url, method, body.decode(), str(seconds), str(threads)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for _ in range(clients)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a client could not connect through {proxy or 'no proxy'}")
        cpu_before = cpu_seconds(pid) if pid else 0.0
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            assert p.stdout is not None
            ok, errors, p50 = p.stdout.readline().split()
            results.append((int(ok), int(errors), float(p50)))
        cpu = (cpu_seconds(pid) - cpu_before) if pid else 0.0
    finally:
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    ok = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    if errors:
        raise RuntimeError(f"{errors} requests failed through {proxy or 'no proxy'}")
    return ok / seconds, 1000 * cpu / max(ok, 1), statistics.median(r[2] for r in results) / 1000


# -- proxies -------------------------------------------------------------------------------

@dataclass
class Proxy:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    ca: Path

    @property
    def url(self) -> str:
        return f"http://{AGENT}:{SECRET}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A real redis-server for the run (gitvow_proxy.testing.RedisServer); yields its URL."""
    from gitvow_proxy.testing import RedisServer  # the proxy's helper: imported only for a Redis run

    server = RedisServer(workdir / "redis").start()
    try:
        yield server.url
    finally:
        server.stop()


@contextmanager
def environment(workdir: Path, redis: bool = False, mitmdump: bool = True) -> Iterator[tuple[str, dict[str, Proxy], Path]]:
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(workdir / "upstream-ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(workdir / "server.pem"))
    upstream = subprocess.Popen(_myself("--serve-upstream", str(workdir)), stdout=subprocess.PIPE, text=True)
    assert upstream.stdout is not None
    netloc = f"127.0.0.1:{int(upstream.stdout.readline())}"
    upstream_ca = workdir / "upstream-ca.pem"

    def policy(name: str, state: str) -> Path:
        path = workdir / f"policy-{name}.toml"
        path.write_text(textwrap.dedent(f"""
            [hosts]
            "{netloc}" = "github"
            [credentials.github]
            token_env = "BENCH_GITHUB_TOKEN"
            [agents.{AGENT}]
            mode = "issues_and_prs"
            secret_env = "BENCH_AGENT_SECRET"
            [budget]
            writes = 1000000000
            [proxy]
            upstream_ca = "{upstream_ca}"
            state = "{state}"
            [audit]
            path = "{workdir / f'audit-{name}.jsonl'}"
        """))
        return path

    def command(name: str, port: int, confdir: Path, states: dict[str, str]) -> list[str]:
        if name in states:
            return [str(BIN / "gitvow"), "proxy", "--policy", str(policy(name, states[name])),
                    "--listen-port", str(port), "--confdir", str(confdir)]
        if name in (BASE, QUICK):
            python = [sys.executable, *(["-O"] * (name == QUICK))]
            return [*python, str(Path(__file__).resolve()), "--passthrough", str(port), str(confdir), str(upstream_ca)]
        return [str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
                "--set", f"confdir={confdir}", "--set", f"ssl_verify_upstream_trusted_ca={upstream_ca}",
                "--set", "connection_strategy=lazy", "--set", "flow_detail=0",
                "--proxyauth", f"{AGENT}:{SECRET}"]

    env = {**os.environ, "BENCH_GITHUB_TOKEN": TOKEN, "BENCH_AGENT_SECRET": SECRET}
    proxies: dict[str, Proxy] = {}
    with ExitStack() as stack:
        try:
            states = {"gitvow": str(workdir / "state.sqlite")}
            if redis:
                states["gitvow-redis"] = stack.enter_context(redis_server(workdir))
            for name in (BASE, QUICK, *(["mitmdump"] if mitmdump else []), *states):
                port = free_port()
                confdir = workdir / f"conf-{name}"
                log = (workdir / f"{name}.log").open("wb")
                proc = subprocess.Popen(command(name, port, confdir, states), stdout=log, stderr=subprocess.STDOUT,
                                        env=env)
                proxies[name] = Proxy(name, proc, port, confdir / "mitmproxy-ca-cert.pem")
                wait_for_port(port, proc, timeout=60, ready=proxies[name].ca.exists)
            yield netloc, proxies, workdir / "auth-seen"
        finally:
            for proxy in proxies.values():
                proxy.stop()
            upstream.terminate()
            upstream.wait()


def _ratios(row: dict[str, float], samples: dict[str, list[float]], names: list[str]) -> None:
    """Each proxy's ``NAME/base`` figures in ``row``: the median of the rounds' throughput
    ratios (each round's measurements are adjacent in time, so this is the figure least
    disturbed by other load on the machine) and the CPU ratio (the baseline's CPU time per
    request over the proxy's: the proxies are CPU-bound, so it is the throughput ratio they
    reach on a machine of their own)."""
    for name in names:
        if name == BASE:
            continue
        row[f"{name}/base"] = statistics.median(
            g / m for g, m in zip(samples[name], samples[BASE], strict=True))
        row[f"{name}/base_cpu"] = row[f"{BASE}_cpu_ms"] / row[f"{name}_cpu_ms"]
        if name.startswith("gitvow"):
            row[f"{name}/O"] = statistics.median(
                g / m for g, m in zip(samples[name], samples[QUICK], strict=True))
            row[f"{name}/O_cpu"] = row[f"{QUICK}_cpu_ms"] / row[f"{name}_cpu_ms"]


def run(duration: float, rounds: int, clients: int, workdir: Path,
        samples_out: dict[str, dict[str, list[float]]] | None = None, redis: bool = False,
        mitmdump: bool = True, workloads: Sequence[str] | None = None,
        threads: int = 2) -> dict[str, dict[str, float]]:
    """Every workload through every proxy; ``threads`` 1 with ``clients`` 1 is one request at a
    time (the latency figures)."""
    results: dict[str, dict[str, float]] = {}
    samples_out = {} if samples_out is None else samples_out
    with environment(workdir, redis, mitmdump) as (netloc, proxies, seen_auth):
        upstream_ca = str(workdir / "upstream-ca.pem")
        names = list(proxies)
        for workload, (method, path, body) in WORKLOADS.items():
            if workloads is not None and workload not in workloads:
                continue
            url = f"https://{netloc}{path}"
            samples: dict[str, list[float]] = {"direct": []}
            for name in names:
                samples[name], samples[f"{name}_cpu_ms"], samples[f"{name}_p50_ms"] = [], [], []
            samples["direct"].append(measure(None, upstream_ca, url, method, body, duration, clients,
                                             threads=threads)[0])
            for proxy in proxies.values():  # warm-up, not measured: caches filled, start-up work done
                measure(proxy.url, str(proxy.ca), url, method, body, min(duration, 1.0), clients, threads=threads)
            for i in range(rounds):
                # ABBA order: a drift in machine load hits every proxy alike.
                for name in names if i % 2 == 0 else reversed(names):
                    proxy = proxies[name]
                    rate, cpu, p50 = measure(proxy.url, str(proxy.ca), url, method, body, duration, clients,
                                             proxy.proc.pid, threads=threads)
                    samples[name].append(rate)
                    samples[f"{name}_cpu_ms"].append(cpu)
                    samples[f"{name}_p50_ms"].append(p50)
            row = {name: statistics.median(values) for name, values in samples.items()}
            _ratios(row, samples, names)
            results[workload] = row
            samples_out[workload] = samples
        if not seen_auth.exists():
            raise RuntimeError("the upstream never saw the injected token: the pipeline did not run")
        for name in proxies:
            if not name.startswith("gitvow"):
                continue
            audit = (workdir / f"audit-{name}.jsonl").read_text().splitlines()
            if not audit or json.loads(audit[-1])["verdict"] != "allow":
                raise RuntimeError(f"{name} wrote no allow decisions to its audit log")
    return results


def report(results: dict[str, dict[str, float]], rounds: int, duration: float) -> None:
    first = next(iter(results.values()))
    names = [n for n in ("mitmdump", "gitvow", "gitvow-redis") if f"{n}/base" in first]
    print(f"requests/s (medians of {rounds} rounds of {duration:g}s), and NAME/{BASE}: the median of the rounds' "
          f"throughput ratios, then the CPU ratio ({BASE} CPU ms/request ÷ NAME's); load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    head = f"{'workload':<8} {'direct':>7} {BASE:>11}" + "".join(f" {n:>12} {'ratio':>6} {'cpu':>6}" for n in names)
    print(head)
    for workload, row in results.items():
        line = f"{workload:<8} {row['direct']:>7.0f} {row[BASE]:>11.0f}"
        for n in names:
            line += f" {row[n]:>12.0f} {row[f'{n}/base']:>6.3f} {row[f'{n}/base_cpu']:>6.3f}"
        print(line)
    gitvows = [n for n in names if f"{n}/O" in first]
    print(f"gitvow's own work alone: NAME/{QUICK} (the baseline under python -O, as gitvow proxy runs)")
    print(f"{'workload':<8} {QUICK:>17}" + "".join(f" {n:>12} {'ratio':>6} {'cpu':>6}" for n in gitvows))
    for workload, row in results.items():
        print(f"{workload:<8} {row[QUICK]:>17.0f}"
              + "".join(f" {row[n]:>12.0f} {row[f'{n}/O']:>6.3f} {row[f'{n}/O_cpu']:>6.3f}" for n in gitvows))
    print("median latency of a request, ms, and what each adds to the baseline (one request at a time: --latency)")
    print(f"{'workload':<8} {BASE:>11} {QUICK:>17}" + "".join(f" {n:>12} {'added':>7}" for n in names))
    for workload, row in results.items():
        print(f"{workload:<8} {row[f'{BASE}_p50_ms']:>11.3f} {row[f'{QUICK}_p50_ms']:>17.3f}"
              + "".join(f" {row[f'{n}_p50_ms']:>12.3f} {row[f'{n}_p50_ms'] - row[f'{BASE}_p50_ms']:>+7.3f}"
                        for n in names))
    print("CPU ms per request")
    print(f"{'workload':<8} {BASE:>11} {QUICK:>17}" + "".join(f" {n:>12}" for n in names))
    for workload, row in results.items():
        print(f"{workload:<8} {row[f'{BASE}_cpu_ms']:>11.3f} {row[f'{QUICK}_cpu_ms']:>17.3f}"
              + "".join(f" {row[f'{n}_cpu_ms']:>12.3f}" for n in names))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-upstream"]:
        serve_upstream(Path(argv[1]))
        return 0
    if argv[:1] == ["--passthrough"]:
        serve_passthrough(int(argv[1]), Path(argv[2]), Path(argv[3]))
        return 0
    if argv[:1] == ["--client"]:
        proxy, cafile, url, method, body, seconds, threads = argv[1:8]
        run_client(proxy, cafile, url, method, body.encode(), float(seconds), int(threads))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds per proxy (median reported)")
    parser.add_argument("--clients", type=int, default=2, help="client processes (two keep-alive threads each)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--redis", action="store_true", help="also a gitvow proxy with its state in a redis-server")
    parser.add_argument("--no-mitmdump", dest="mitmdump", action="store_false",
                        help="leave out the bare mitmdump row (all its default addons)")
    parser.add_argument("--latency", action="store_true",
                        help="one client, one request at a time: the added latency at the median")
    parser.add_argument("--workloads", type=lambda v: v.split(","), default=None,
                        help=f"a comma-separated subset of {','.join(WORKLOADS)}")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="gitvow-bench-"))
    samples: dict[str, dict[str, list[float]]] = {}
    try:
        results = run(args.duration, args.rounds, 1 if args.latency else args.clients, workdir, samples,
                      redis=args.redis, mitmdump=args.mitmdump, workloads=args.workloads,
                      threads=1 if args.latency else 2)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(results, args.rounds, args.duration)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "samples": samples}, indent=2))
    return 0


@pytest.mark.e2e
def test_bench_proxy_runs(tmp_path: Path) -> None:
    """The benchmark works end to end (figures are never asserted)."""
    pytest.importorskip("gitvow_github")
    pytest.importorskip("trustme")
    redis = bool(shutil.which("redis-server") or os.path.exists("/usr/bin/redis-server"))
    results = run(duration=0.5, rounds=1, clients=1, workdir=tmp_path, redis=redis)
    assert set(results) == set(WORKLOADS)
    assert all(row["gitvow"] > 0 and row[BASE] > 0 and row[QUICK] > 0 and row["mitmdump"] > 0
               for row in results.values())
    assert all(row["gitvow/base"] > 0 and row["gitvow/base_cpu"] > 0 and row["gitvow/O"] > 0
               for row in results.values())
    assert not redis or all(row["gitvow-redis"] > 0 for row in results.values())


if __name__ == "__main__":
    sys.exit(main())
