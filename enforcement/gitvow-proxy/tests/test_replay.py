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
