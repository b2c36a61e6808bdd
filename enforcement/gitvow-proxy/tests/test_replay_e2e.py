"""``gitvow proxy --record`` then ``gitvow replay``, with the real ``gh`` and ``git``.

One recording through a real proxy (gh reads and comments as two agents, a canary in a
comment, the same in a gzip body with a cookie, a git clone and push), then replays of it:
under the policy it was recorded with (nothing changes), a stricter one (the repository
paused) and a looser one (the reader may comment), from the flow file, from its HAR export
and from the audit log. The changes listed are exactly the expected ones and the exit status
follows them. The recording never holds a credential, a canary, a cookie or a proxy secret.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import ssl
import subprocess
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from proxy_support import (
    GIT_TOKEN,
    GITVOW,
    MITMDUMP,
    RESOLVE_ADDON,
    SECRETS,
    ProxyProcess,
    Seen,
    git,
    make_bare_repo,
    proxy_env,
    start_proxy,
    start_upstream,
)

pytestmark = pytest.mark.e2e

HOST = "ghes.test"
COOKIE = "session=cookie-value-5f2e9a"
def _api(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    path = seen.path.split("?", 1)[0]
    if path == "/api/v3/repos/team/app":
        data: object = {"id": 1, "name": "app", "full_name": "team/app", "owner": {"login": "team"}}
    elif path.endswith("/comments") and seen.method == "POST":
        return 201, {"Content-Type": "application/json", "Set-Cookie": "upstream=set-cookie-7c1d"}, b'{"id": 5}'
    else:
        data = {"method": seen.method, "path": seen.path}
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()


def policy_text(workdir: Path, port: int, ca_file: Path, *, reader_mode: str = "advisory", extra: str = "") -> str:
    return textwrap.dedent(f"""
        [hosts]
        "{HOST}:{port}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [agents.reader]
        mode = "{reader_mode}"
        secret_env = "GITVOW_TEST_READER"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
    """) + textwrap.dedent(extra)


@dataclass
class Recording:
    flows: Path
    audit: Path
    policy: Path
    stricter: Path
    looser: Path
    canaries: dict[str, str]
    workdir: Path

    def audit_lines(self) -> list[dict[str, Any]]:
        """The audit lines of the agents' requests (not the 407s of connections not yet authenticated)."""
        lines = [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]
        return [line for line in lines if line["agent"] is not None]


def agent_env(proxy: ProxyProcess, agent: str, home: Path) -> dict[str, str]:
    out = subprocess.run(
        [GITVOW, "env", "--policy", str(proxy.policy), "--agent", agent, "--listen-port", str(proxy.port),
         "--confdir", str(proxy.confdir), "--json"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "GITVOW_TEST_READER": SECRETS["reader"], "GITVOW_TEST_CODER": SECRETS["coder"],
             "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN},
    )
    env: dict[str, str] = json.loads(out.stdout)
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **env}


def gh(env: dict[str, str], port: int, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    full = {**env, "GH_HOST": f"{HOST}:{port}", "GH_CONFIG_DIR": str(home / "gh"), "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"}
    return subprocess.run(["gh", *args], capture_output=True, text=True, env=full, timeout=60)


@pytest.fixture(scope="module")
def recording(ca: trustme.CA, ca_file: Path, broken_plugin_path: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recording]:
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    if shutil.which("gh") is None:
        pytest.skip("the gh CLI is not installed (Debian package gh)")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("replay-git")
    make_bare_repo(root, "team/app", tmp_path_factory.mktemp("replay-seed"))
    upstream = start_upstream(ca, root, names=(HOST,))
    upstream.routes["/api/"] = _api
    workdir = tmp_path_factory.mktemp("replay")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(policy_text(workdir, upstream.port, ca_file))
    stricter = workdir / "stricter.toml"
    stricter.write_text(policy_text(workdir, upstream.port, ca_file, extra='[run_state]\npaused = ["team/app"]\n'))
    looser = workdir / "looser.toml"
    looser.write_text(policy_text(workdir, upstream.port, ca_file, reader_mode="issues_and_prs"))
    flows = workdir / "agents.flows"
    env = {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": HOST}
    proxy = start_proxy(policy, workdir, env, extra=[f"scripts={resolve}"], args=["--record", str(flows)])
    canaries: dict[str, str] = {}
    try:
        home = tmp_path_factory.mktemp("replay-home")
        coder, reader = agent_env(proxy, "coder", home), agent_env(proxy, "reader", home)
        canaries = {"coder": coder["GH_TOKEN"], "reader": reader["GH_TOKEN"]}
        comments = "repos/team/app/issues/1/comments"
        assert gh(coder, upstream.port, home, "api", "repos/team/app").returncode == 0
        assert gh(coder, upstream.port, home, "api", "-X", "POST", comments, "-f", "body=hello").returncode == 0
        assert gh(reader, upstream.port, home, "api", "-X", "POST", comments, "-f", "body=hi").returncode != 0
        leak = gh(coder, upstream.port, home, "api", "-X", "POST", comments, "-f", f"body=token {canaries['coder']}")
        assert leak.returncode != 0
        # The canary again, gzip-compressed, with a cookie and the agent's own Authorization.
        context = ssl.create_default_context(cafile=str(proxy.ca))
        with httpx.Client(proxy=proxy.url("coder", SECRETS["coder"]), verify=context, timeout=30) as client:
            refused = client.post(
                f"https://{HOST}:{upstream.port}/api/v3/{comments}",
                content=gzip.compress(json.dumps({"body": f"see {canaries['coder']}"}).encode()),
                headers={"Content-Encoding": "gzip", "Content-Type": "application/json", "Cookie": COOKIE,
                         "Authorization": f"token {canaries['coder']}"},
            )
        assert refused.headers["x-gitvow-reason"] == "canary_egress"
        work = home / "app"
        git("clone", "-q", f"https://{HOST}:{upstream.port}/team/app.git", str(work), cwd=home, env=coder)
        (work / "change.txt").write_text("a change\n")
        git("add", "change.txt", cwd=work, env=coder)
        git("commit", "-q", "-m", "change", cwd=work, env=coder)
        git("push", "-q", "origin", "HEAD:refs/heads/feature", cwd=work, env=coder)
    finally:
        assert proxy.stop() == 0, proxy.log_text()
        upstream.server.shutdown()
    yield Recording(flows, workdir / "audit.jsonl", policy, stricter, looser, canaries, workdir)


def replay(*args: str | Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([GITVOW, "replay", "--json", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def changes(report: dict[str, Any]) -> Counter[tuple[str, str, str, str, str]]:
    """kind, operation, agent, old, new → count."""
    def label(d: dict[str, Any]) -> str:
        return d["verdict"] if d["reason"] is None else f"{d['verdict']}:{d['reason']}"

    found: Counter[tuple[str, str, str, str, str]] = Counter()
    for group in report["groups"]:
        assert group["repo"] == "team/app", group
        found[(group["kind"], group["operation"], group["agent"], label(group["old"]), label(group["new"]))] += group["count"]
    return found


def push_requests(recording: Recording) -> int:
    return sum(1 for line in recording.audit_lines() if line["operations"] == ["git.push"])


def test_the_recording_holds_no_secret(recording: Recording) -> None:
    data = recording.flows.read_bytes()
    assert data
    forbidden = [GIT_TOKEN, SECRETS["coder"], SECRETS["reader"], *recording.canaries.values(), "cookie-value-5f2e9a",
                 "set-cookie-7c1d", base64.b64encode(f"coder:{SECRETS['coder']}".encode()).decode()]
    for secret in forbidden:
        assert secret.encode() not in data, secret
        for shift in range(3):  # nor its base64 spelling, at any alignment
            spelled = base64.b64encode(b"\0" * shift + secret.encode())[4:-4]
            assert spelled not in data, secret
    lowered = data.lower()
    for header in (b"proxy-authorization", b"authorization", b"cookie"):
        assert header not in lowered, header


def test_the_recording_is_a_mitmproxy_flow_file_with_the_decisions(recording: Recording) -> None:
    from mitmproxy import http
    from mitmproxy.io import FlowReader

    with recording.flows.open("rb") as fo:
        flows = [f for f in FlowReader(fo).stream() if isinstance(f, http.HTTPFlow)]
    audit = recording.audit_lines()
    assert len(flows) == len(audit)
    meta = [f.metadata["gitvow"] for f in flows]
    assert [(m["agent"], m["verdict"], m["reason"]) for m in meta] == [(a["agent"], a["verdict"], a["reason"]) for a in audit]
    assert {m["policy"]["path"] for m in meta} == {str(recording.policy)}
    withheld = [f for f in flows if f.metadata["gitvow"]["body_withheld"]]
    assert len(withheld) == 1 and "content-encoding" not in withheld[0].request.headers  # the gzip one


def test_replay_under_the_recorded_policy_changes_nothing(recording: Recording) -> None:
    status, report = replay("--policy", recording.policy, recording.flows)
    assert (status, report["changed"], report["requests"]) == (0, 0, len(recording.audit_lines()))
    status, report = replay("--policy", recording.policy, "--against", recording.policy, recording.flows)
    assert (status, report["changed"]) == (0, 0)


def stricter_changes(recording: Recording) -> Counter[tuple[str, str, str, str, str]]:
    return Counter({
        ("allow→deny", "issue.comment", "coder", "allow", "deny:repo_paused"): 1,
        ("allow→deny", "git.push", "coder", "allow", "deny:repo_paused"): push_requests(recording),
        ("changed", "issue.comment", "reader", "deny:mode_denied", "deny:repo_paused"): 1,
        ("changed", "issue.comment", "coder", "deny:canary_egress", "deny:repo_paused"): 2,
    })


def test_a_stricter_policy_lists_exactly_the_new_refusals(recording: Recording) -> None:
    assert push_requests(recording) == 2  # info/refs and receive-pack
    status, report = replay("--policy", recording.stricter, recording.flows)
    assert status == 1
    assert changes(report) == stricter_changes(recording)
    assert report["flips"] == 3 and report["counts"]["changed"] == 3
    examples = {g["operation"]: g["example"] for g in report["groups"] if g["kind"] == "allow→deny"}
    assert examples["git.push"]["url"] == f"https://{HOST}:{recording_port(recording)}/team/app.git/info/refs"
    assert "budget" in report["limits"] and "run-time flags" in report["limits"]
    # Against the policy file rather than the recorded decisions: the same answer.
    status, against = replay("--policy", recording.stricter, "--against", recording.policy, recording.flows)
    assert status == 1 and changes(against) == changes(report)


def recording_port(recording: Recording) -> int:
    line = next(line for line in recording.audit_lines() if line["operations"] == ["git.push"])
    return int(line["host"].rpartition(":")[2])


def test_a_looser_policy_lists_exactly_the_new_allowances(recording: Recording) -> None:
    status, report = replay("--policy", recording.looser, recording.flows)
    assert status == 1
    # The canary refusals stay: the placeholder the recording holds is still recognised.
    assert changes(report) == Counter({("deny→allow", "issue.comment", "reader", "deny:mode_denied", "allow"): 1})


def test_text_output_names_groups_and_stages(recording: Recording) -> None:
    proc = subprocess.run([GITVOW, "replay", "--policy", str(recording.looser), str(recording.flows)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "deny→allow (1)" in out and "issue.comment  agent=reader  repo=team/app" in out
    assert "deny (mode_denied) → allow" in out and "e.g. POST https://ghes.test:" in out
    assert "budget: replayed from the recording's time" in out and "run-time flags: skipped" in out


def test_the_har_export_replays_the_same(recording: Recording) -> None:
    har = recording.workdir / "agents.har"
    subprocess.run([MITMDUMP, "-q", "-n", "-r", str(recording.flows), "--set", f"hardump={har}"],
                   check=True, capture_output=True, timeout=60)
    # HAR holds no agent and no decision: the old side is a policy, the agent is named.
    proc = subprocess.run([GITVOW, "replay", "--policy", str(recording.stricter), str(har)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--against" in proc.stderr
    status, report = replay("--policy", recording.looser, "--against", recording.policy, "--agent", "reader", har)
    # Every request as the reader: its two plain comments and the push become allowed; the two
    # canary comments, refused by mode before, now reach the canary gate, which still knows
    # the placeholder the recording holds.
    assert status == 1
    assert changes(report) == Counter({
        ("deny→allow", "issue.comment", "reader", "deny:mode_denied", "allow"): 2,
        ("deny→allow", "git.push", "reader", "deny:mode_denied", "allow"): push_requests(recording),
        ("changed", "issue.comment", "reader", "deny:mode_denied", "deny:canary_egress"): 2,
    })


def test_the_audit_log_replays_at_the_level_of_operations(recording: Recording) -> None:
    status, report = replay("--policy", recording.stricter, recording.audit)
    assert status == 1
    assert changes(report) == stricter_changes(recording)
    assert "audit-log line" in report["limits"]["body"]
    status, report = replay("--policy", recording.looser, recording.audit)
    assert status == 1
    # The canary refusals were made at the body stage, which the log cannot re-run: they keep it.
    assert changes(report) == Counter({("deny→allow", "issue.comment", "reader", "deny:mode_denied", "allow"): 1})
