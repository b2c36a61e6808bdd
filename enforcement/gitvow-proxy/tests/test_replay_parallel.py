"""Large recordings are read by several processes and field by field (``replay.parallel``,
``replay.flowfile``): the requests, the agents and the report must be exactly those of
mitmproxy's ``FlowReader`` read in one process — with several agents, budgets filling up
across the pieces, CONNECTs whose user names the later flows of their connection in another
piece, HAR files, an older flow format migrated by mitmproxy, and unreadable files."""

from __future__ import annotations

import base64
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proxy_support import GITVOW

pytest.importorskip("gitvow_github", reason="the recordings are GitHub traffic")

from mitmproxy import connection, http
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.io import FlowReader, FlowWriter, tnetstring

from gitvow_proxy.record import METADATA_KEY
from gitvow_proxy.replay import load, parallel, replay
from gitvow_proxy.replay.inputs import InputError, Recorded, read

HOST = "ghes.test"
API = "/api/v3/repos/team"
ROUTES = [
    ("GET", "/app/pulls?state=open", b""),
    ("POST", "/app/issues/7/comments", b'{"body":"looks right"}'),
    ("POST", "/app/issues", b'{"title":"flaky","body":"one run in ten"}'),
    ("PATCH", "/lib/issues/3", b'{"state":"closed"}'),
    ("POST", "/lib/issues/3/labels", b'{"labels":["bug"]}'),
    ("GET", "/lib/contents/README.md", b""),
]
AGENTS = ("coder", "reader", "helper")


def policy(tmp_path: Path, name: str, reader: str, budget: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}" = "github"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "UNSET"

        [agents.reader]
        mode = "{reader}"
        secret_env = "UNSET"

        [agents.helper]
        mode = "issues_only"
        secret_env = "UNSET"

        [budget]
        window_seconds = 60
        {budget}
    """))
    return path


@pytest.fixture
def policies(tmp_path: Path) -> tuple[Path, Path]:
    old = policy(tmp_path, "old.toml", "advisory", "writes = 1000")
    # tighter per-agent budgets: each fills in its own window, across the pieces the file is cut into
    new = policy(tmp_path, "new.toml", "issues_only",
                 'agents = { coder = { writes = 5 }, helper = { operations = { "issue.comment" = 2 } } }')
    return old, new


def _flow(client: connection.Client, i: int, *, method: str, path: str, body: bytes,
          headers: dict[str, str], meta: dict[str, Any] | None) -> http.HTTPFlow:
    flow = http.HTTPFlow(client, connection.Server(address=(HOST, 443)))
    flow.request = http.Request.make(method, f"https://{HOST}{path}", body, headers)
    flow.request.timestamp_start = 1_764_000_000.0 + i * 1.5
    flow.response = http.Response.make(200, b"")
    if meta is not None:
        flow.metadata[METADATA_KEY] = meta
    return flow


def recorded_flows(count: int) -> Iterator[http.HTTPFlow]:
    """What ``gitvow proxy --record`` writes: three agents, the decisions in the metadata."""
    client = connection.Client(peername=("127.0.0.1", 50000), sockname=("127.0.0.1", 8080), timestamp_start=0.0)
    for i in range(count):
        method, path, body = ROUTES[i % len(ROUTES)]
        agent = AGENTS[(i // 5) % len(AGENTS)]
        verdict = "deny" if agent == "reader" and method != "GET" else "allow"
        yield _flow(client, i, method=method, path=API + path, body=body,
                    headers={"content-type": "application/json", "X-Repeated": "a", "x-repeated": "b"},
                    meta={"agent": agent, "verdict": verdict, "reason": None if verdict == "allow" else "mode_denied",
                          "stage": "forward" if verdict == "allow" else "policy", "operations": ["x"],
                          "repo": "team/app", "policy": {"path": "old.toml", "sha256": "ab" * 32},
                          "body_withheld": False})


def plain_flows(count: int) -> Iterator[http.HTTPFlow]:
    """What ``mitmdump -w`` writes: the agent is the user of the request's Proxy-Authorization,
    or of its connection's CONNECT (earlier in the file), or nobody (``--agent``)."""
    clients = [connection.Client(peername=("127.0.0.1", 50000 + n), sockname=("127.0.0.1", 8080),
                                 timestamp_start=0.0) for n in range(3)]
    for n, client in enumerate(clients[:2]):
        auth = "Basic " + base64.b64encode(f"{AGENTS[n]}:secret".encode()).decode()
        yield _flow(client, n, method="CONNECT", path="", body=b"", headers={"proxy-authorization": auth}, meta=None)
    for i in range(2, count):
        method, path, body = ROUTES[i % len(ROUTES)]
        headers = {"content-type": "application/json"}
        if i % 7 == 0:
            headers["Proxy-Authorization"] = "Basic " + base64.b64encode(b"helper:secret").decode()
        yield _flow(clients[i % 3], i, method=method, path=API + path, body=body, headers=headers, meta=None)


def write(path: Path, flows: Iterator[http.HTTPFlow]) -> Path:
    with path.open("wb") as fo:
        writer = FlowWriter(fo)  # type: ignore[no-untyped-call]
        for flow in flows:
            if flow.request.method == "CONNECT":  # as Request.make cannot build one
                flow.request.data.method = b"CONNECT"
                flow.request.data.path = b""
            writer.add(flow)
    return path


def flow_reader(path: Path, agent: str | None = None) -> list[Recorded]:
    """The reference: mitmproxy's FlowReader building every Flow, in this process."""
    from gitvow_proxy.replay import inputs

    def stream() -> Iterator[inputs.Seen]:
        with path.open("rb") as fo:
            for index, flow in enumerate(FlowReader(fo).stream()):
                if (item := inputs.seen_from_flow(index, flow)) is not None:
                    yield item

    items = list(inputs._resolve(path, stream(), agent))
    items.sort(key=lambda item: item.time)
    return items


def same(item: Recorded) -> tuple[Any, ...]:
    """Everything replay reads of a request (headers as ``Request.header`` answers them)."""
    request = item.request
    headers = {name.lower(): request.headers.get(name.lower()) for name in request.headers}
    return (item.source, item.time, item.agent, item.recorded, item.classified, item.body_withheld, item.policy,
            request.method, request.host, request.path, request.query, headers, request.body, request.port,
            request.scheme)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut files into pieces of 7 records, so a few dozen requests span many workers' pieces."""
    monkeypatch.setattr(parallel, "CHUNK_RECORDS", 7)


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("kind", ["recorded", "plain"])
def test_parallel_reads_what_flow_reader_reads(tmp_path: Path, kind: str) -> None:
    path = write(tmp_path / f"{kind}.flows", (recorded_flows if kind == "recorded" else plain_flows)(120))
    agent = None if kind == "recorded" else "reader"
    reference = [same(item) for item in flow_reader(path, agent)]
    assert len(reference) == (120 if kind == "recorded" else 118)
    assert len({row[2] for row in reference}) == 3  # three agents, each found its own way
    # the fast path reads it
    assert parallel.read(path, workers=1) is not None and parallel.read(path, workers=2) is not None
    assert [same(item) for item in load([path], agent=agent, workers=1)] == reference
    assert [same(item) for item in load([path], agent=agent, workers=2)] == reference


@pytest.mark.usefixtures("small_pieces")
def test_parallel_report_is_the_serial_report(tmp_path: Path, policies: tuple[Path, Path]) -> None:
    old, new = policies
    recorded = write(tmp_path / "recorded.flows", recorded_flows(150))
    plain = write(tmp_path / "plain.flows", plain_flows(150))
    for files, against in (([recorded], None), ([recorded], old), ([recorded, plain], old)):
        serial = replay(flow_reader_many(files), new, against).as_dict()
        assert replay(load(files, agent="reader", workers=1), new, against).as_dict() == serial
        assert replay(load(files, agent="reader", workers=2), new, against).as_dict() == serial
        kinds = {(group["kind"], group["new"]["reason"]) for group in serial["groups"]}
        # the budgets fill across the pieces: throttles that only a time-ordered replay finds
        assert ("allow→deny", "write_budget") in kinds
        assert {group["agent"] for group in serial["groups"]} >= {"coder", "helper"}


def flow_reader_many(files: list[Path]) -> list[Recorded]:
    items = [item for path in files for item in flow_reader(path, "reader")]
    items.sort(key=lambda item: item.time)
    return items


@pytest.mark.usefixtures("small_pieces")
def test_har_is_read_by_mitmproxy_in_pieces(tmp_path: Path, policies: tuple[Path, Path]) -> None:
    flows = tmp_path / "recorded.flows"
    write(flows, recorded_flows(60))
    har = tmp_path / "recorded.har"
    with flows.open("rb") as fo:
        har.write_text(json.dumps(SaveHar().make_har(list(FlowReader(fo).stream()))))  # type: ignore[no-untyped-call]
    reference = [same(item) for item in flow_reader(har, "coder")]
    assert len(reference) == 60
    assert parallel.read(har, workers=2) is not None
    assert [same(item) for item in load([har], agent="coder", workers=2)] == reference
    old, new = policies
    assert (replay(load([har], agent="coder", workers=2), new, old).as_dict()
            == replay(flow_reader(har, "coder"), new, old).as_dict())


def test_an_older_flow_format_is_migrated_by_mitmproxy(tmp_path: Path) -> None:
    flows = list(recorded_flows(4))
    path = tmp_path / "old-format.flows"
    with path.open("wb") as fo:
        for n, flow in enumerate(flows):
            state = flow.get_state()
            if n % 2:
                state["version"] = 20  # mitmproxy's compat.migrate_flow upgrades it
            tnetstring.dump(state, fo)
    reference = [same(item) for item in flow_reader(path)]
    assert parallel.read(path, workers=2) is not None
    assert [same(item) for item in load([path], workers=1)] == reference
    assert [same(item) for item in load([path], workers=2)] == reference


@pytest.mark.parametrize("damage", ["truncated", "garbage inside", "foreign version"])
def test_unreadable_flow_files_say_why_in_one_line(tmp_path: Path, damage: str) -> None:
    path = write(tmp_path / "damaged.flows", recorded_flows(30))
    data = path.read_bytes()
    if damage == "truncated":
        data = data[:-40]
    elif damage == "garbage inside":
        middle = len(data) // 2
        data = data[:middle] + b"x" * 10 + data[middle + 10:]
    else:
        state = next(recorded_flows(1)).get_state()
        state["version"] = 99
        data += tnetstring.dumps(state)
    path.write_bytes(data)
    for workers in (1, 2):
        with pytest.raises(parallel.Unreadable):
            parallel.read(path, workers=workers)
    messages = set()
    for workers in (1, 2):
        with pytest.raises(InputError) as caught:
            list(read(path, workers=workers))
        messages.add(str(caught.value))
    assert len(messages) == 1
    message = messages.pop()
    assert "damaged.flows" in message and "\n" not in message
    if damage == "foreign version":
        assert "flow format version 99" in message


def test_the_command_reads_a_large_file_on_every_core(tmp_path: Path, policies: tuple[Path, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the threshold ``gitvow replay`` reads in parallel by itself; its report is the
    one mitmproxy's FlowReader gives in one process. The threshold is lowered for the command
    (``GITVOW_REPLAY_PARALLEL_MIN``), so the file need not hold thousands of flows."""
    import os

    old, new = policies
    assert parallel.workers_for(150, None) == 1  # below the shipped threshold: one process
    path = write(tmp_path / "large.flows", recorded_flows(150))
    env = {**os.environ, "GITVOW_REPLAY_PARALLEL_MIN": "100"}
    monkeypatch.setenv("GITVOW_REPLAY_PARALLEL_MIN", "100")
    assert parallel.workers_for(150, None) == parallel.cores()  # what the command does with it
    proc = subprocess.run([GITVOW, "replay", "--json", "--policy", str(new), "--against", str(old), str(path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout) == replay(flow_reader(path), new, old).as_dict()
