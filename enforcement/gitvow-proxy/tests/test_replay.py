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
    proc = subprocess.run([GITVOW, "proxy", "--policy", str(path), "--listen-port", "0", "--confdir",
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


def run_replay_cli(tmp_path: Path, path: Path) -> subprocess.CompletedProcess[str]:
    """The command under a 2 GiB address-space limit: what a file announces is never allocated."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([GITVOW, "replay", "--policy", str(policy(tmp_path, "p.toml")), "--agent", "coder", str(path)],
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


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


@pytest.mark.parametrize("name", sorted(hostile_inputs()))
def test_hostile_and_empty_inputs_are_one_line_exit_2(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(hostile_inputs()[name])
    proc = run_replay_cli(tmp_path, path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"gitvow replay: {path}") or f"gitvow replay: cannot read {path}" in proc.stderr
    assert proc.stdout == ""
