"""``gitvow replay`` on files: the committed HAR fixture (mitmproxy's own HAR export of a
``gitvow proxy --record`` recording), audit logs (budget replayed from the recording's time,
reason-only changes), a plain mitmdump-style flow file identified by its Proxy-Authorization,
unreadable inputs, and the recorder's redaction."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from proxy_support import GITVOW

HAR = Path(__file__).parent / "fixtures" / "replay" / "coder.har"

pytest.importorskip("gitvow_github", reason="the fixtures are GitHub traffic")


def policy(tmp_path: Path, name: str, *, coder: str = "issues_and_prs", extra: str = "") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "ghes.test" = "github"

        [agents.reader]
        mode = "advisory"
        secret_env = "UNSET_READER_SECRET"

        [agents.coder]
        mode = "{coder}"
        secret_env = "UNSET_CODER_SECRET"
    """) + textwrap.dedent(extra))
    return path


def replay(*args: str | Path) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([GITVOW, "replay", "--json", *map(str, args)], capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def summary(report: dict[str, Any]) -> set[tuple[str, str, str | None, str, str, int]]:
    def label(d: dict[str, Any]) -> str:
        return d["verdict"] if d["reason"] is None else f"{d['verdict']}:{d['reason']}"

    return {(g["kind"], g["operation"], g["agent"], label(g["old"]), label(g["new"]), g["count"]) for g in report["groups"]}


# -- HAR ---------------------------------------------------------------------------------------

def test_har_fixture_under_a_stricter_mode(tmp_path: Path) -> None:
    old, new = policy(tmp_path, "old.toml"), policy(tmp_path, "new.toml", coder="advisory")
    status, report, err = replay("--policy", new, "--against", old, "--agent", "coder", HAR)
    assert status == 1, err
    assert report["requests"] == 5
    # pr.create and pr.merge were relayed (hard_deny) before and still are; the read stays allowed.
    assert summary(report) == {("allow→deny", "issue.comment", "coder", "allow", "deny:mode_denied", 1),
                               ("allow→deny", "issue.create", "coder", "allow", "deny:mode_denied", 1)}
    group = report["groups"][0]
    assert group["repo"] == "team/app" and group["example"]["method"] == "POST"
    assert group["example"]["url"].endswith("/api/v3/repos/team/app/issues/1/comments")


def test_har_fixture_under_the_same_policy_changes_nothing(tmp_path: Path) -> None:
    old = policy(tmp_path, "old.toml")
    status, report, err = replay("--policy", old, "--against", old, "--agent", "coder", HAR)
    assert (status, report["changed"], report["requests"]) == (0, 0, 5), err


def test_har_needs_against_and_says_so(tmp_path: Path) -> None:
    status, report, err = replay("--policy", policy(tmp_path, "p.toml"), HAR)
    assert status == 2 and report == {}
    assert err.count("\n") == 1 and "coder.har" in err and "--against" in err


def test_requests_without_an_agent_are_named(tmp_path: Path) -> None:
    old, new = policy(tmp_path, "old.toml"), policy(tmp_path, "new.toml", coder="advisory")
    status, report, _ = replay("--policy", new, "--against", old, HAR)
    assert (status, report["changed"]) == (0, 0)  # unauthenticated either way
    assert "5 request(s) name no agent" in report["limits"]["identity"]


# -- audit logs ----------------------------------------------------------------------------------

def audit_line(time: str, agent: str | None, method: str, path: str, operations: list[str], verdict: str,
               reason: str | None, stage: str) -> str:
    return json.dumps({"time": time, "agent": agent, "host": "ghes.test:443", "method": method, "path": path,
                       "operations": operations, "repo": "team/app" if operations else None, "verdict": verdict,
                       "reason": reason, "stage": stage, "latency_ms": 0.2})


COMMENT = "/api/v3/repos/team/app/issues/1/comments"


def write_audit(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_audit_budget_is_replayed_from_the_recorded_time(tmp_path: Path) -> None:
    budget = '[budget]\nwindow_seconds = 3600\nagents = { coder = { operations = { "issue.comment" = 2 } } }\n'
    new = policy(tmp_path, "new.toml", extra=budget)
    times = ["2026-11-30T09:00:00.000Z", "2026-11-30T09:10:00.000Z", "2026-11-30T09:20:00.000Z",
             "2026-11-30T11:00:00.000Z"]
    log = write_audit(tmp_path / "audit.jsonl", [
        audit_line(t, "coder", "POST", COMMENT, ["issue.comment"], "allow", None, "forward") for t in times
    ])
    status, report, err = replay("--policy", new, log)
    assert status == 1, err
    # The third comment falls in the first two's window; the fourth, two hours on, does not.
    assert summary(report) == {("allow→deny", "issue.comment", "coder", "allow", "throttle:write_budget", 1)}
    assert report["groups"][0]["example"]["source"].endswith("audit.jsonl:3")
    assert report["old"] == "as recorded in the audit log"


def test_audit_reason_only_change_exits_zero(tmp_path: Path) -> None:
    new = policy(tmp_path, "new.toml", extra='[run_state]\npaused = ["team/app"]\n')
    log = write_audit(tmp_path / "audit.jsonl", [
        audit_line("2026-11-30T09:00:00.000Z", "reader", "POST", COMMENT, ["issue.comment"], "deny", "mode_denied", "policy"),
        audit_line("2026-11-30T09:00:01.000Z", "reader", "GET", "/api/v3/repos/team/app", ["read"], "allow", None, "forward"),
        audit_line("2026-11-30T09:00:02.000Z", None, "CONNECT", "", [], "refuse", "proxy_auth", "identity"),
    ])
    status, report, err = replay("--policy", new, log)
    assert status == 0, err
    assert summary(report) == {("changed", "issue.comment", "reader", "deny:mode_denied", "deny:repo_paused", 1)}
    assert report["requests"] == 3


def test_audit_body_refusals_keep_their_stage(tmp_path: Path) -> None:
    new = policy(tmp_path, "new.toml", coder="issues_and_prs")
    log = write_audit(tmp_path / "audit.jsonl", [
        audit_line("2026-11-30T09:00:00.000Z", "coder", "POST", COMMENT, ["issue.comment"], "deny", "canary_egress", "body"),
    ])
    status, report, _ = replay("--policy", new, log)
    assert (status, report["changed"]) == (0, 0)
    assert "keeps that refusal" in report["limits"]["body"]
    # An agent the new policy no longer names is refused as unauthenticated.
    gone = tmp_path / "gone.toml"
    gone.write_text('[hosts]\n"ghes.test" = "github"\n')
    status, report, _ = replay("--policy", gone, log)
    assert status == 0  # refused either way
    assert summary(report) == {("changed", "issue.comment", "coder", "deny:canary_egress", "refuse:proxy_auth", 1)}


def test_malformed_audit_line_is_one_line_naming_it(tmp_path: Path) -> None:
    log = write_audit(tmp_path / "audit.jsonl", [
        audit_line("2026-11-30T09:00:00.000Z", "coder", "GET", "/api/v3/repos/team/app", ["read"], "allow", None, "forward"),
        '{"time": "2026-11-30T09:00:00.000Z", "verdict": "allow", "method": "GET"}',
    ])
    status, _, err = replay("--policy", policy(tmp_path, "p.toml"), log)
    assert status == 2 and err.count("\n") == 1 and f"{log}:2" in err and "host" in err


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.flows"
    junk.write_bytes(b"\x00\x01 not a flow file")
    status, _, err = replay("--policy", policy(tmp_path, "p.toml"), "--against", policy(tmp_path, "o.toml"), junk)
    assert status == 2 and err.count("\n") == 1 and "junk.flows" in err
    status, _, err = replay("--policy", policy(tmp_path, "p.toml"), tmp_path / "absent.flows")
    assert status == 2 and "absent.flows" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.coder]\nmode = 'sideways'\n")
    status, _, err = replay("--policy", bad, "--against", bad, HAR)
    assert status == 2 and "bad.toml" in err


# -- a plain mitmproxy flow file -----------------------------------------------------------------

def test_plain_flow_file_takes_the_proxy_authorization_user(tmp_path: Path) -> None:
    from mitmproxy.io import FlowWriter
    from mitmproxy.test import tflow, tutils

    flows = tmp_path / "plain.flows"
    with flows.open("wb") as fo:
        writer = FlowWriter(fo)  # type: ignore[no-untyped-call]
        for user in ("coder", "reader"):
            auth = "Basic " + base64.b64encode(f"{user}:whatever-secret".encode()).decode()
            req = tutils.treq(host="ghes.test", port=443, scheme=b"https", method=b"POST",
                              path=COMMENT.encode(), content=b'{"body":"x"}',
                              headers=((b"host", b"ghes.test"), (b"proxy-authorization", auth.encode())))
            writer.add(tflow.tflow(req=req))  # type: ignore[no-untyped-call]
    old, new = policy(tmp_path, "old.toml"), policy(tmp_path, "new.toml", coder="advisory")
    status, report, err = replay("--policy", new, "--against", old, flows)
    assert status == 1, err
    assert summary(report) == {("allow→deny", "issue.comment", "coder", "allow", "deny:mode_denied", 1)}


# -- the recorder's redaction --------------------------------------------------------------------

def test_redactor_replaces_and_withholds() -> None:
    from gitvow_proxy.record import REDACTED, Redactor, canary_placeholder

    canary = "gvc_0123456789abcdef0123456789abcdef"
    redactor = Redactor.build(secrets=("ghs_tokentokentoken",), canaries={canary: "coder"}, literal=())
    assert redactor.text(f"x {canary} ghs_tokentokentoken".encode()) == (
        f"x {canary_placeholder('coder')} ".encode() + REDACTED)
    body, withheld = redactor.body(gzip.compress(canary.encode()), "gzip", git_push=False)
    assert (body, withheld) == (canary_placeholder("coder").encode(), True)
    body, withheld = redactor.body(base64.b64encode(b"token=ghs_tokentokentoken"), "", git_push=False)
    assert (body, withheld) == (REDACTED, True)
    assert redactor.body(b'{"body": "fine"}', "", git_push=False) == (b'{"body": "fine"}', False)


def test_record_to_an_unwritable_place_is_refused(tmp_path: Path) -> None:
    path = policy(tmp_path, "p.toml")
    proc = subprocess.run([GITVOW, "proxy", "--policy", str(path), "--allow-unset-secrets", "--listen-port", "0", "--confdir",
                           str(tmp_path / "conf"), "--record", str(tmp_path / "no" / "such" / "dir" / "x.flows")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "gitvow_record" in proc.stderr and "x.flows" in proc.stderr


def test_recorder_truncates_or_appends_as_mitmproxy_does(tmp_path: Path) -> None:
    from mitmproxy.io import FlowReader
    from mitmproxy.test import tflow

    from gitvow_proxy.record import Recorder

    target = tmp_path / "r.flows"
    target.write_bytes(b"")
    target.chmod(0o644)

    def flows() -> int:
        with target.open("rb") as fo:
            return len(list(FlowReader(fo).stream()))

    for spec, expected in ((str(target), 1), (f"+{target}", 2), (str(target), 1)):
        recorder = Recorder(spec)
        recorder.write(tflow.tflow(resp=True))  # type: ignore[no-untyped-call]
        recorder.close()
        assert flows() == expected, spec
    assert target.stat().st_mode & 0o777 == 0o600


# -- every kind of audit line the proxy writes ------------------------------------------------

PULLS = "/api/v3/repos/team/app/pulls"


def step_line(time: str, verdict: str, approval: str, *, reason: str | None = None, by: str | None = None,
              path: str = PULLS, operations: tuple[str, ...] = ("pr.create",)) -> str:
    """An approval's step as :func:`gitvow_proxy.audit.audit_approval` writes it."""
    method = "PUT" if path.endswith("/merge") else "POST"
    line = {"time": time, "agent": "coder", "host": "ghes.test:443", "method": method, "path": path,
            "operations": list(operations), "repo": "team/app", "verdict": verdict, "reason": reason,
            "stage": "approval", "latency_ms": 0.0, "approval": approval}
    if by:
        line["by"] = by
    return json.dumps(line)


def operator_line(time: str, verdict: str) -> str:
    """``gitvow pause``/``resume`` and the desk's, as they write it."""
    return json.dumps({"time": time, "agent": None, "host": "-", "method": "-", "path": "-", "operations": [],
                       "repo": "team/app", "verdict": verdict, "reason": None, "stage": "run_state",
                       "latency_ms": 0.0, "note": "incident"})


def approval_log(tmp_path: Path) -> Path:
    """Three pull requests staged for a human: one approved, sent and then answered again from
    the record, one rejected, one still pending; a pause and a resume; a refused raw stream."""
    t = "2026-11-30T09:00:{:02d}.000Z".format
    create = ["pr.create"]
    return write_audit(tmp_path / "audit.jsonl", [
        # 1: staged, retried while pending, approved, sent by the proxy, answered from the record
        step_line(t(0), "staged", "AAAAAA", reason="hard_deny"),
        audit_line(t(0), "coder", "POST", PULLS, create, "deny", "hard_deny", "policy"),
        audit_line(t(1), "coder", "POST", PULLS, create, "deny", "hard_deny", "policy"),
        step_line(t(2), "approved", "AAAAAA", by="alice"),
        audit_line(t(3), "reader", "GET", "/api/v3/repos/team/app", ["read"], "allow", None, "forward"),
        audit_line(t(3), "coder", "POST", PULLS, create, "allow", None, "forward"),  # the proxy's send
        step_line(t(4), "sent", "AAAAAA", reason="201"),
        step_line(t(5), "answered", "AAAAAA"),
        # 2: staged, rejected, retried after the rejection
        step_line(t(6), "staged", "BBBBBB", reason="hard_deny", path=PULLS + "/2/merge", operations=("pr.merge",)),
        audit_line(t(6), "coder", "PUT", PULLS + "/2/merge", ["pr.merge"], "deny", "hard_deny", "policy"),
        step_line(t(7), "rejected", "BBBBBB", reason="not now", by="alice", path=PULLS + "/2/merge",
                  operations=("pr.merge",)),
        audit_line(t(8), "coder", "PUT", PULLS + "/2/merge", ["pr.merge"], "deny", "approval_rejected", "policy"),
        # 3: staged, nobody answered yet
        step_line(t(9), "staged", "CCCCCC", reason="hard_deny", path=PULLS + "/3/merge", operations=("pr.merge",)),
        audit_line(t(9), "coder", "PUT", PULLS + "/3/merge", ["pr.merge"], "deny", "hard_deny", "policy"),
        operator_line(t(10), "paused"),
        operator_line(t(11), "resumed"),
        json.dumps({"time": t(12), "agent": None, "host": "10.0.0.1:22", "method": "STREAM", "path": "",
                    "operations": [], "repo": None, "verdict": "deny", "reason": "unsupported_protocol",
                    "stage": "transport", "latency_ms": 0.0}),
        # an approval staged before the log begins: its steps are not requests
        step_line(t(13), "sent", "DDDDDD", reason="201"),
    ])


def test_every_audit_line_kind_is_read(tmp_path: Path) -> None:
    from gitvow_proxy.replay.inputs import read

    items = list(read(approval_log(tmp_path)))
    outcomes = [(item.request.method, item.request.path.rsplit("/", 2)[-2], item.recorded.verdict,
                 item.recorded.reason, item.recorded.held) for item in items if item.recorded is not None]
    assert outcomes == [
        ("POST", "app", "sent", None, True),                     # request 1 with its final outcome
        ("POST", "app", "deny", "hard_deny", False),             # its retry while it was pending
        ("GET", "team", "allow", None, False),
        ("POST", "app", "answered", None, True),                 # the retry answered from the record
        ("PUT", "2", "rejected", "approval_rejected", True),
        ("PUT", "2", "deny", "approval_rejected", True),
        ("PUT", "3", "pending", "hard_deny", True),
    ]


def test_approvals_replay_as_one_request_each_with_their_final_outcome(tmp_path: Path) -> None:
    log = approval_log(tmp_path)
    status, report, err = replay("--policy", policy(tmp_path, "same.toml"), log)
    assert (status, report["requests"], report["changed"]) == (0, 7, 0), err
    assert "approvals" in report["limits"]
    # Without the approval relay for pr.create (allowed outright), what a human approved stays
    # allowed: passing differently, not a flip; the retry refused while it waited now passes;
    # the merges are still put before a human.
    looser = policy(tmp_path, "looser.toml", extra='[operations."pr.create"]\nmin_mode = "issues_and_prs"\n')
    status, report, err = replay("--policy", looser, log)
    assert status == 1, err
    assert summary(report) == {("changed", "pr.create", "coder", "sent", "allow", 1),
                               ("changed", "pr.create", "coder", "answered", "allow", 1),
                               ("deny→allow", "pr.create", "coder", "deny:hard_deny", "allow", 1)}
    # A policy that refuses pull requests outright flips the sent request and the answered retry.
    stricter = policy(tmp_path, "stricter.toml", extra='[operations."pr.create"]\ndeny = true\n')
    status, report, err = replay("--policy", stricter, log)
    assert status == 1, err
    flips = {(op, old, new, n) for kind, op, _a, old, new, n in summary(report) if kind == "allow→deny"}
    assert {(op, old, n) for op, old, _new, n in flips} == {("pr.create", "sent", 1), ("pr.create", "answered", 1)}


#: Runs ``gitvow replay`` (the command's own ``main``) on each file named in argv[2:], under a
#: 2 GiB address-space limit, in one process: each file's exit status and what it printed.
DRIVER = """
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from gitvow.cli.main import main
results = {}
for path in sys.argv[2:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["replay", "--policy", sys.argv[1], "--agent", "coder", path])
    results[path] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(results))
"""


def nested_tnetstring(depth: int) -> bytes:
    """A list nested ``depth`` deep, built outside in (each length known before its payload)."""
    lengths = [3]  # b"0:]"
    for _ in range(depth):
        inner = lengths[-1]
        lengths.append(len(str(inner)) + 1 + inner + 1)
    return b"".join(f"{n}:".encode() for n in reversed(lengths[1:])) + b"0:]" + b"]" * depth


def flow_record(**fields: bytes) -> bytes:
    """A flow record (a tnetstring dictionary) whose values are given as tnetstrings."""
    from mitmproxy import version
    from mitmproxy.io import tnetstring

    items = {"type": tnetstring.dumps("http"), "version": tnetstring.dumps(version.FLOW_FORMAT_VERSION), **fields}
    payload = b"".join(tnetstring.dumps(key) + value for key, value in items.items())
    return f"{len(payload)}:".encode() + payload + b"}"


def hostile_inputs() -> dict[str, bytes]:
    json_deep = {depth: "[" * depth + "]" * depth for depth in (5_000, 100_000)}
    return {
        "huge-header.flows": b"999999999999:" + b"x" * 64,
        "huge-field.flows": flow_record(request=b"999999999999:" + b"x" * 64 + b"}"),
        "deep-5000.flows": flow_record(request=nested_tnetstring(5_000)),
        "deep-100000.flows": flow_record(metadata=nested_tnetstring(100_000)),
        "deep-5000.har": f'{{"log": {{"entries": {json_deep[5_000]}}}}}'.encode(),
        "deep-100000.har": f'{{"log": {{"entries": [{json_deep[100_000]}]}}}}'.encode(),
        "deep-audit.jsonl": (f'{{"verdict": "allow", "method": "GET", "x": {json_deep[100_000]}}}\n').encode(),
        "deep-audit-line-2.jsonl": (audit_line("2026-11-30T09:00:00.000Z", "coder", "GET", "/api/v3/x", ["read"],
                                               "allow", None, "forward") + "\n" + json_deep[5_000] + "\n").encode(),
        "har-entry.har": b'{"log": {"entries": [{"request": 7}]}}',
        "not-har.har": b'{"log": 3}',
        "empty.flows": b"",
        "blank.jsonl": b"\n\n",
        "only-pauses.jsonl": (operator_line("2026-11-30T09:00:00.000Z", "paused") + "\n").encode(),
    }


def test_hostile_and_empty_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    """What a file announces is never allocated (2 GiB would not hold it), nesting is bounded,
    and each bad file is exit 2 with one line naming it: never a traceback."""
    import sys

    paths = []
    for name, data in hostile_inputs().items():
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(str(path))
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(policy(tmp_path, "p.toml")), *paths],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert sorted(results) == sorted(paths)
    for path, (code, out, err) in results.items():
        assert code == 2, (path, err[-2000:])
        assert "Traceback" not in err and err.count("\n") == 1, (path, err[-2000:])
        assert err.startswith(f"gitvow replay: {path}") or f"gitvow replay: cannot read {path}" in err, (path, err)
        assert out == "", path


def test_pauses_in_the_audit_log_are_replayed_at_their_time(tmp_path: Path) -> None:
    t = "2026-11-30T09:00:{:02d}.000Z".format
    log = write_audit(tmp_path / "audit.jsonl", [
        audit_line(t(0), "coder", "POST", COMMENT, ["issue.comment"], "allow", None, "forward"),
        operator_line(t(1), "paused"),
        audit_line(t(2), "coder", "POST", COMMENT, ["issue.comment"], "deny", "repo_paused", "run_state"),
        operator_line(t(3), "resumed"),
        audit_line(t(4), "coder", "POST", COMMENT, ["issue.comment"], "allow", None, "forward"),
    ])
    status, report, err = replay("--policy", policy(tmp_path, "same.toml"), log)
    assert (status, report["requests"], report["changed"]) == (0, 3, 0), (err, report)
    assert "pause and resume lines are replayed" in report["limits"]["run-time flags"]
    # a policy that stops the agent commenting refuses the two that passed; the paused one is
    # still refused first for the pause (run state comes before policy)
    stricter = policy(tmp_path, "stricter.toml", coder="advisory")
    status, report, err = replay("--policy", stricter, log)
    assert status == 1, err
    assert summary(report) == {("allow→deny", "issue.comment", "coder", "allow", "deny:mode_denied", 2)}


def test_a_recording_holds_no_secret_in_any_part_or_encoding(tmp_path: Path) -> None:
    """The canary, the injected token and the agent's proxy secret, each percent-encoded, base64'd
    or as written, in the path, the query, a header, a header's name, HTTP/2 trailers (request
    and response), the host, its authority and SNI, the body: none of it reaches the disk in
    any form the canary check would find."""
    import base64 as b64
    from urllib.parse import quote as pct

    from mitmproxy import http
    from mitmproxy.io import FlowReader
    from mitmproxy.test import tflow

    from gitvow_proxy.canary import CanaryScanner
    from gitvow_proxy.record import Recorder, Redactor, sanitized

    canary, token, secret = "gvc_0123456789abcdef0123456789abcdef", "ghs_tokentokentoken1234", "proxysecret-5678-abcd"
    redactor = Redactor.build(secrets=(token, secret), canaries={canary: "coder"}, literal=())

    def spellings(value: str) -> list[str]:
        return [value, pct(value, safe=""), "".join(f"%{b:02X}" for b in value.encode()),
                b64.b64encode(value.encode()).decode(), b64.urlsafe_b64encode(b"x" + value.encode()).decode()]

    flows = []
    for value in (canary, token, secret):
        for n, spelled in enumerate(spellings(value)):
            flow = tflow.tflow(resp=True)  # type: ignore[no-untyped-call]
            request = flow.request
            request.host = f"{spelled.lower().rstrip('=')}.example.test" if n == 0 else "ghes.test"
            request.authority = request.host
            flow.client_conn.sni = request.host
            request.path = f"/repos/{spelled}/issues?access_token={spelled}&page=2"
            request.headers["X-Note"] = f"token {spelled}"
            request.headers[f"X-{value[:8]}"] = "1"
            request.trailers = http.Headers(((b"grpc-message", f"k={spelled}".encode()),))
            request.content = json.dumps({"body": f"see {spelled}"}).encode()
            flow.response.trailers = http.Headers(((b"x-echo", spelled.encode()),))
            flow.response.headers["X-Echo"] = spelled
            flows.append(sanitized(flow, {"agent": "coder", "verdict": "allow"}, redactor, ()))
    path = tmp_path / "r.flows"
    recorder = Recorder(str(path))
    for flow in flows:
        recorder.write(flow)
    recorder.close()
    assert path.stat().st_mode & 0o777 == 0o600
    data = path.read_bytes()
    scanner = CanaryScanner({canary: "c", token: "t", secret: "s"}, limit=1 << 26)
    assert scanner.find(data) is None
    for value in (canary, token, secret):
        for spelled in spellings(value):
            assert spelled.encode() not in data and spelled.lower().rstrip("=").encode() not in data, spelled
    # what can be kept is kept: the route and the other parameters
    with path.open("rb") as fo:
        kept = list(FlowReader(fo).stream())
    assert all("/issues" in f.request.path and "page=2" in f.request.path for f in kept)
    assert canary_placeholder_in(kept)


def canary_placeholder_in(flows: list[Any]) -> bool:
    from gitvow_proxy.record import canary_placeholder

    return any(canary_placeholder("coder") in f.request.path for f in flows)
