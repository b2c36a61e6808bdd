"""Soak: ``gitvow proxy`` held under a mixed load for a set time, beside bare ``mitmdump``.

Run: ``python benchmarks/soak.py --duration 600 [--state sqlite|redis] [--clients 2] [--json FILE]``

One loopback HTTPS upstream (mapped to the ``github`` adapter as a GHES host), and a mix per
client thread, in a fixed rotation of twenty requests:

- 12 reads: ``GET /api/v3/repos/team/app/issues/N`` (200)
- 5 allowed writes: ``POST …/issues/N/comments`` (201; every one takes from a budget)
- 3 refused writes: ``PUT …/pulls/N/merge`` (403 ``hard_deny``: the mode forbids merges)

Any other answer, or a failed request, is an error. The state store is a SQLite file, or a
``redis-server`` the script starts (``--state redis``). Bare ``mitmdump --proxyauth``, under
the same mix from its own clients at the same time, is the memory yardstick.

Reported: requests and errors per proxy; the proxy's resident memory (VmRSS) after the
warm-up (the first tenth, at most 60 s) and at the end, the growth in between, and the ratio
to mitmdump's at the end; whether the audit log holds exactly one decision line per answered
request (approval steps, such as a refused merge staged for a human, are lines of their own).
Nothing is asserted about the figures: ``test_soak_runs`` only checks the script works.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gitvow.testing import free_port, wait_for_port

BIN = Path(sys.executable).parent
AGENT, SECRET, TOKEN = "soak", "soak-secret", "ghs_soaktoken0123456789"

#: kind → (method, path template, body, the status gitvow answers)
REQUESTS = {
    "read": ("GET", "/api/v3/repos/team/app/issues/{n}", b"", 200),
    "write": ("POST", "/api/v3/repos/team/app/issues/{n}/comments", b'{"body": "soak test comment"}', 201),
    "refused": ("PUT", "/api/v3/repos/team/app/pulls/{n}/merge", b'{"merge_method": "squash"}', 403),
}
ROTATION = ["read"] * 12 + ["write"] * 5 + ["refused"] * 3


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


# -- upstream and load (their own processes) -----------------------------------------------

def serve_upstream(cert_dir: Path) -> None:
    """201 to a POST, 200 to everything else; prints its port."""
    from gitvow.testing import RecordingServer, Reply, Seen

    def reply(seen: Seen) -> Reply:
        return (201 if seen.method == "POST" else 200), {"Content-Type": "application/json"}, b'{"id": 1}'

    server = RecordingServer(reply, certfile=cert_dir / "server.pem", record=False)
    print(server.port, flush=True)
    server.serve_forever()


def run_client(proxy: str, cafile: str, base: str, seconds: float, threads: int, strict: bool) -> None:
    """Loads through ``proxy`` for ``seconds``; prints one JSON line of counts.
    ``strict``: only gitvow's expected answers count as success (bare mitmdump passes all)."""
    import httpx

    headers = {"Authorization": "token agent-placeholder", "Content-Type": "application/json"}
    deadline = time.monotonic() + seconds
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def loop(i: int) -> None:
        mine: Counter[str] = Counter()
        client = httpx.Client(proxy=proxy, verify=ssl.create_default_context(cafile=cafile), timeout=30)
        n = 0
        while time.monotonic() < deadline:
            kind = ROTATION[n % len(ROTATION)]
            n += 1
            method, path, body, expected = REQUESTS[kind]
            try:
                r = client.request(method, base + path.format(n=n % 50 + 1), content=body or None, headers=headers)
            except httpx.HTTPError:
                mine["errors"] += 1
                client.close()
                client = httpx.Client(proxy=proxy, verify=ssl.create_default_context(cafile=cafile), timeout=30)
                continue
            mine["answered"] += 1
            if (r.status_code == expected) if strict else (r.status_code < 400):
                mine[kind] += 1
            else:
                mine["errors"] += 1
                mine[f"status_{r.status_code}"] += 1
        client.close()
        with lock:
            counts.update(mine)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(json.dumps(dict(counts)), flush=True)


def _myself(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


# -- proxies and the state store -----------------------------------------------------------

@dataclass
class Proxy:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    ca: Path
    rss: list[tuple[float, int]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{AGENT}:{SECRET}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
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
def environment(workdir: Path, state: str) -> Iterator[tuple[str, dict[str, Proxy]]]:
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(workdir / "upstream-ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(workdir / "server.pem"))
    upstream = subprocess.Popen(_myself("--serve-upstream", str(workdir)), stdout=subprocess.PIPE, text=True)
    assert upstream.stdout is not None
    netloc = f"127.0.0.1:{int(upstream.stdout.readline())}"
    proxies: dict[str, Proxy] = {}
    with redis_server(workdir) if state == "redis" else _nothing(str(workdir / "state.sqlite")) as spec:
        policy = workdir / "policy.toml"
        policy.write_text(textwrap.dedent(f"""
            [hosts]
            "{netloc}" = "github"
            [credentials.github]
            token_env = "SOAK_GITHUB_TOKEN"
            [agents.{AGENT}]
            mode = "issues_and_prs"
            secret_env = "SOAK_AGENT_SECRET"
            [budget]
            window_seconds = 3600
            writes = 100000000
            [proxy]
            upstream_ca = "{workdir / 'upstream-ca.pem'}"
            state = "{spec}"
            [audit]
            path = "{workdir / 'audit.jsonl'}"
        """))
        env = {**os.environ, "SOAK_GITHUB_TOKEN": TOKEN, "SOAK_AGENT_SECRET": SECRET}
        try:
            for name in ("mitmdump", "gitvow"):
                port = free_port()
                confdir = workdir / f"conf-{name}"
                if name == "gitvow":
                    cmd = [str(BIN / "gitvow"), "proxy", "--policy", str(policy), "--listen-port", str(port),
                           "--confdir", str(confdir)]
                else:
                    cmd = [str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
                           "--set", f"confdir={confdir}",
                           "--set", f"ssl_verify_upstream_trusted_ca={workdir / 'upstream-ca.pem'}",
                           "--set", "connection_strategy=lazy", "--set", "flow_detail=0",
                           "--proxyauth", f"{AGENT}:{SECRET}"]
                log = (workdir / f"{name}.log").open("wb")
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
                proxies[name] = Proxy(name, proc, port, confdir / "mitmproxy-ca-cert.pem")
                wait_for_port(port, proc, timeout=60, ready=proxies[name].ca.exists)
            yield f"https://{netloc}", proxies
        finally:
            for proxy in proxies.values():
                proxy.stop()
            upstream.terminate()
            upstream.wait()


@contextmanager
def _nothing(value: str) -> Iterator[str]:
    yield value


def soak(duration: float, state: str, clients: int, workdir: Path, sample_every: float = 5.0) -> dict[str, object]:
    with environment(workdir, state) as (base, proxies):
        runs: dict[str, list[subprocess.Popen[str]]] = {}
        for name, proxy in proxies.items():
            runs[name] = [
                subprocess.Popen(_myself("--client", proxy.url, str(proxy.ca), base, str(duration), "2",
                                         "strict" if name == "gitvow" else "lax"), stdout=subprocess.PIPE, text=True)
                for _ in range(clients)
            ]
        warm = min(duration / 10, 60.0)
        started = time.monotonic()
        baseline: dict[str, int] = {}
        while any(p.poll() is None for procs in runs.values() for p in procs):
            now = time.monotonic() - started
            for proxy in proxies.values():
                proxy.rss.append((now, rss_kib(proxy.proc.pid)))
                if now >= warm and proxy.name not in baseline:
                    baseline[proxy.name] = proxy.rss[-1][1]
            time.sleep(min(sample_every, max(duration / 20, 0.2)))
        counts: dict[str, Counter[str]] = {}
        for name, procs in runs.items():
            total: Counter[str] = Counter()
            for p in procs:
                out, _ = p.communicate()
                total.update(json.loads(out.strip().splitlines()[-1]))
            counts[name] = total
        end = {name: rss_kib(proxy.proc.pid) for name, proxy in proxies.items()}
        for name, proxy in proxies.items():
            baseline.setdefault(name, proxy.rss[0][1] if proxy.rss else end[name])
        time.sleep(0.5)  # the last audit lines reach the file
        # One line per decision, plus one per approval step (a refused merge staged for a human).
        stages = Counter(json.loads(line)["stage"] == "approval" for line in (workdir / "audit.jsonl").open())
        audit, steps = stages[False], stages[True]
    ours = counts["gitvow"]
    return {
        "state": state,
        "duration_s": duration,
        "requests": {name: c["answered"] for name, c in counts.items()},
        "errors": {name: c["errors"] for name, c in counts.items()},
        "mix": {kind: ours[kind] for kind in REQUESTS},
        "other_statuses": {k: v for k, v in ours.items() if k.startswith("status_")},
        "rss_mib_after_warmup": {name: round(v / 1024, 1) for name, v in baseline.items()},
        "rss_mib_end": {name: round(v / 1024, 1) for name, v in end.items()},
        "rss_growth_pct": {name: round(100 * (end[name] - baseline[name]) / baseline[name], 2) for name in end},
        "rss_ratio_end": round(end["gitvow"] / end["mitmdump"], 3),
        "audit_decision_lines": audit,
        "audit_approval_step_lines": steps,
        "audit_one_line_per_request": audit == ours["answered"],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-upstream"]:
        serve_upstream(Path(argv[1]))
        return 0
    if argv[:1] == ["--client"]:
        proxy, cafile, base, seconds, threads, strict = argv[1:7]
        run_client(proxy, cafile, base, float(seconds), int(threads), strict == "strict")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    parser.add_argument("--state", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--clients", type=int, default=1, help="client processes per proxy (two threads each)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="gitvow-soak-"))
    try:
        report = soak(args.duration, args.state, args.clients, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


@pytest.mark.e2e
@pytest.mark.parametrize("state", ["sqlite", "redis"])
def test_soak_runs(state: str, tmp_path: Path) -> None:
    """The soak works end to end for a few seconds (figures are never asserted)."""
    pytest.importorskip("gitvow_github")
    pytest.importorskip("trustme")
    if state == "redis" and not (shutil.which("redis-server") or os.path.exists("/usr/bin/redis-server")):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    report = soak(duration=3.0, state=state, clients=1, workdir=tmp_path, sample_every=0.5)
    assert report["errors"] == {"gitvow": 0, "mitmdump": 0}, report
    mix = report["mix"]
    assert isinstance(mix, dict) and all(mix[kind] > 0 for kind in REQUESTS), report
    assert report["audit_one_line_per_request"], report


if __name__ == "__main__":
    sys.exit(main())
