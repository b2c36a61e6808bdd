"""The audit log is never lost silently: reopened when moved or deleted, and on SIGHUP; a line
that cannot be written refuses its request (``audit_unavailable``); a path that cannot be the
log is one line at start and in ``policy check``. Tested under load too: four clients at once
while the file is deleted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from proxy_support import (
    GITVOW,
    Upstream,
    agent_client,
    proxy_env,
    start_proxy,
    write_policy,
)

from gitvow_proxy.audit import AuditLog, AuditUnavailable, audit_path_problem

FETCH = "/team/app.git/info/refs?service=git-upload-pack"


def _line(log: AuditLog, n: int) -> None:
    log.write(agent="bot", host="h:443", method="GET", path=f"/{n}", verdict="allow", stage="policy")


def _paths(path: Path) -> list[str]:
    return [json.loads(line)["path"] for line in path.read_text().splitlines()]


def test_a_deleted_or_moved_log_is_reopened_at_its_path(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"
    log = AuditLog(str(path))
    _line(log, 1)
    path.unlink()
    _line(log, 2)
    assert _paths(path) == ["/2"]
    path.rename(tmp_path / "audit.jsonl.1")  # logrotate's move
    _line(log, 3)
    assert _paths(path) == ["/3"] and _paths(tmp_path / "audit.jsonl.1") == ["/2"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    log.close()


def test_reopen_follows_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    _line(log, 1)
    path.rename(tmp_path / "old")
    log.reopen()
    _line(log, 2)
    assert _paths(path) == ["/2"]
    log.close()


def test_a_failed_write_raises_and_is_counted() -> None:
    log = AuditLog("/dev/full")  # every write fails with ENOSPC, as on a full disk
    with pytest.raises(AuditUnavailable, match=r"audit\.path: cannot write the audit log"):
        _line(log, 1)
    with pytest.raises(AuditUnavailable):
        _line(log, 2)
    assert log.errors == 2
    log.close()


ODD = ["plain", "quote\" back\\slash", "line\nbreak\ttab\x00nul\x1f", "é ü 漢字 🎉", "\ud800 lone surrogate", ""]


@pytest.mark.parametrize("odd", ODD)
def test_the_line_is_what_json_writes(tmp_path: Path, odd: str) -> None:
    """The line is built by hand (json.dumps on a dict costs several times more): every field, in
    order, exactly as json.dumps(record, separators=(",", ":")) wrote it, whatever the text holds."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    fields = {"agent": odd or None, "host": odd, "method": odd, "path": f"/{odd}?token=x", "operations": (odd, "b"),
              "repo": odd or None, "verdict": odd, "reason": odd or None, "stage": odd, "note": odd or None,
              "approval": odd or None, "by": odd or None}
    log.write(latency=0.0123456, **fields)  # type: ignore[arg-type]
    log.write(agent=None, host="h", method="GET", path="/", verdict="allow", stage="policy", latency=2.5)
    log.close()
    first, second = path.read_bytes().decode("ascii").splitlines()
    record = json.loads(first)
    optional = {key: fields.pop(key) for key in ("note", "approval", "by")}
    expected = {"time": record["time"], **fields, "path": f"/{odd}", "operations": [odd, "b"], "latency_ms": 12.346,
                **{key: value for key, value in optional.items() if value}}
    assert first == json.dumps(expected, separators=(",", ":"))
    assert list(record) == list(expected)
    assert json.loads(second)["latency_ms"] == 2500.0 and json.loads(second)["agent"] is None


def test_the_latency_is_written_as_json_writes_the_rounded_float() -> None:
    import random

    from gitvow_proxy.audit import _milliseconds

    rng = random.Random(22)
    values = [0.0, -0.0, 0.0005, 0.0015, 0.0025, 1.0005, 2.5, 1e-7, 999.9995, 0.1235, 0.1245, 1e15, 3e17,
              float("inf"), float("nan")]
    values += [rng.random() * 10 ** rng.randint(-6, 8) for _ in range(20000)]
    values += [rng.randint(0, 10**9) / 1000 + rng.choice((0.0, 0.0005, -0.0005)) for _ in range(20000)]
    for value in values:
        assert _milliseconds(value) == json.dumps(round(value, 3)), value


def test_a_value_that_is_not_text_is_written_as_json_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    log.write(agent="bot", host="h", method="GET", path="/", repo=7, verdict="allow", stage="policy")  # type: ignore[arg-type]
    log.close()
    assert json.loads(path.read_text())["repo"] == 7


def test_each_line_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    """No buffer in the process: a proxy killed right after a decision has its line."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    _line(log, 1)
    assert _paths(path) == ["/1"]  # read while the log is still open
    log.close()


def test_standard_error_gets_the_lines_and_reopen_leaves_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    log = AuditLog("-")
    _line(log, 1)
    log.reopen()
    _line(log, 2)
    log.close()
    assert [json.loads(line)["path"] for line in capsys.readouterr().err.splitlines()] == ["/1", "/2"]
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_paths_that_cannot_be_the_log(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert audit_path_problem(str(blocker / "audit.jsonl")) == f"cannot create {blocker / 'audit.jsonl'}: {blocker} is not a directory"
    assert audit_path_problem(str(tmp_path)) == f"{tmp_path} is a directory"
    assert audit_path_problem(str(tmp_path / "new" / "dir" / "audit.jsonl")) is None
    assert audit_path_problem("-") is None
    with pytest.raises(AuditUnavailable, match=r"audit\.path: cannot open the audit log"):
        AuditLog(str(blocker / "audit.jsonl"))


# -- through the real proxy ---------------------------------------------------------------------

@pytest.mark.e2e
def test_an_unwritable_audit_path_is_one_line_at_start_and_in_policy_check(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    policy.write_text(policy.read_text().replace(str(tmp_path / "audit.jsonl"), str(blocker / "audit.jsonl")))
    env = {**os.environ, **proxy_env(broken_plugin_path)}
    started = subprocess.run([GITVOW, "proxy", "--policy", str(policy), "--listen-port", "0"], capture_output=True,
                             text=True, env=env, timeout=60)
    assert started.returncode == 2
    (line,) = started.stderr.strip().splitlines()
    assert "audit.path" in line and "is not a directory" in line
    checked = subprocess.run([GITVOW, "policy", "check", str(policy)], capture_output=True, text=True, env=env,
                             timeout=60)
    assert checked.returncode != 0 and "audit.path" in checked.stderr and "Traceback" not in checked.stderr


@pytest.mark.e2e
def test_the_audit_log_survives_deletion_and_sighup_under_traffic(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        upstream.clear()
        sent = 0
        with agent_client(proxy, "coder") as c:
            for i in range(60):
                if i == 20:
                    proxy.audit.unlink()  # deleted mid-run
                if i == 40:
                    proxy.audit.rename(tmp_path / "audit.jsonl.1")  # rotated, then told
                    proxy.proc.send_signal(signal.SIGHUP)
                assert c.get(upstream.url(f"{FETCH}&n={i}")).status_code == 200
                sent += 1
        assert proxy.proc.poll() is None, "SIGHUP must not stop the proxy"
        forwarded = len([s for s in upstream.seen if s.path.startswith("/team/app.git/info/refs")])
        assert forwarded == sent == 60
        kept = proxy.audit_lines()
        rotated = [json.loads(x) for x in (tmp_path / "audit.jsonl.1").read_text().splitlines()]
        allowed = [line for line in [*rotated, *kept] if line["verdict"] == "allow" and line["agent"] == "coder"]
        # The first 20 lines went with the deleted file; every later one is at the configured path
        # (requests 20-39 until the rotation, 40-59 after SIGHUP).
        assert len(allowed) == 40
        assert len([line for line in kept if line["agent"] == "coder"]) == 20
    finally:
        assert proxy.stop() == 0


@pytest.mark.e2e
def test_a_failing_audit_log_refuses_instead_of_forwarding(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    policy.write_text(policy.read_text().replace(str(tmp_path / "audit.jsonl"), "/dev/full"))
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    try:
        upstream.clear()
        with agent_client(proxy, "coder") as c:
            refused = c.get(upstream.url(FETCH))
        assert refused.status_code == 503 and refused.headers["x-gitvow-reason"] == "audit_unavailable"
        assert upstream.seen == []
        assert "cannot write the audit log" in proxy.log_text()
    finally:
        assert proxy.stop() == 0


@pytest.mark.e2e
def test_every_request_sent_after_the_deletion_has_its_line_under_concurrent_load(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """Four agents' clients at once; the audit file is deleted while they send: every request
    sent after the deletion is forwarded and has its line at the configured path."""
    import threading
    import time

    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    proxy = start_proxy(policy, tmp_path, proxy_env(broken_plugin_path))
    started: dict[str, float] = {}
    lock = threading.Lock()
    deleted_at: list[float] = []

    def send(k: int) -> None:
        with agent_client(proxy, "coder") as c:
            for i in range(30):
                path = f"/team/load{k}-{i}.git/info/refs"
                with lock:
                    started[path] = time.monotonic()
                c.get(upstream.url(f"{path}?service=git-upload-pack"))

    try:
        upstream.clear()
        threads = [threading.Thread(target=send, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        while len(started) < 40 and any(t.is_alive() for t in threads):
            time.sleep(0.01)
        proxy.audit.unlink()  # deleted mid-run, with requests in flight
        deleted_at.append(time.monotonic())
        for t in threads:
            t.join(timeout=120)
        forwarded = {s.route for s in upstream.seen}
        after = {path for path, at in started.items() if at > deleted_at[0]}
        assert len(started) == 120 and len(after) >= 40, (len(started), len(after))
        assert after <= forwarded  # every one of them was forwarded...
        kept = {line["path"] for line in proxy.audit_lines() if line["agent"] == "coder"}
        assert after <= kept, sorted(after - kept)  # ...and has its line at the configured path
        assert kept <= forwarded
    finally:
        assert proxy.stop() == 0
