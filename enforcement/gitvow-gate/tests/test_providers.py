"""Providers (docs/gate.md): a real one from PyPI, and our own that crash, hang and print garbage."""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitvow_gate import providers
from gitvow_gate.call import FileEdit, GateCall
from gitvow_gate.decide import decide
from gitvow_gate.gate_policy import GatePolicy, Provider

from .conftest import Hooked

GATE_DOC = Path(__file__).resolve().parents[3] / "docs" / "gate.md"
FACTS = shutil.which("gitvow-provider-facts", path=str(Path(sys.executable).parent)) or shutil.which(
    "gitvow-provider-facts")
JAVA = "src/api/OrdersResource.java"


def edit(repo: Path, path: str, old: str, new: str) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse", "permission_mode": "default",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / path), "old_string": old, "new_string": new}}


def answer_of(hooked: Hooked) -> tuple[str, str]:
    if not hooked.stdout:
        return "allow", ""
    out = hooked.json()["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.fixture
def orders(tmp_path: Path, repo: Path) -> Path:
    """A fact store for the service ``orders``: two gated routes and one recorded caller."""
    store = tmp_path / "facts.db"
    db = sqlite3.connect(store)
    db.execute("create table fact (repo text, kind text, subject text, object text, file text)")
    db.execute("create table edge (src_repo text, src_site text, dst_service text, dst_path text, verb text)")
    db.executemany("insert into fact values (?, ?, ?, ?, ?)", [
        ("orders", "route_gate", "GET /v1/orders/{id}", "AUTHENTICATED via /v1/orders/*", JAVA),
        ("orders", "route_gate", "GET /v1/public/ping", "OPEN via /v1/public/*", JAVA),
    ])
    db.execute("insert into edge values (?, ?, ?, ?, ?)",
               ("billing-worker", "sync.py:41", "orders", "/v1/orders/{}", "GET"))
    db.commit()
    db.close()
    return store


@pytest.fixture
def facts_policy(repo: Path, orders: Path, write_policy: Callable[..., Path]) -> Path:
    assert FACTS, "gitvow-provider-facts must be installed in the test environment"
    return write_policy(repo, {"providers": [{
        "name": "topology",
        "command": f"{FACTS} --store {orders} --repo orders --service orders --gate-file 'auth/*'",
    }]})


def test_real_provider_route_gate_yes_is_confirmed_with_its_evidence(repo: Path, facts_policy: Path,
                                                                     hook: Callable[..., Hooked]) -> None:
    outcome, reason = answer_of(hook("claude", "PreToolUse",
                                     edit(repo, JAVA, "", '@Path("/v1/public/export")'), cwd=repo))
    assert outcome == "ask"
    assert "provider topology: route_gate /v1/public/export" in reason
    assert "whitelist pattern /v1/public/* makes it OPEN without authentication" in reason


def test_real_provider_route_callers_for_a_removed_literal(repo: Path, facts_policy: Path,
                                                           hook: Callable[..., Hooked]) -> None:
    outcome, reason = answer_of(hook("claude", "PreToolUse",
                                     edit(repo, JAVA, '@Path("/v1/orders/{id}")', "// gone"), cwd=repo))
    assert outcome == "ask"
    assert "route_callers /v1/orders/{id}" in reason and "called by billing-worker (sync.py:41) GET" in reason


def test_real_provider_no_means_allow(repo: Path, facts_policy: Path, hook: Callable[..., Hooked]) -> None:
    assert hook("claude", "PreToolUse", edit(repo, JAVA, "", '"/v1/orders/export"'), cwd=repo) == Hooked(0, "", "")


def test_real_provider_gate_bearing(repo: Path, facts_policy: Path, hook: Callable[..., Hooked]) -> None:
    outcome, reason = answer_of(hook("claude", "PreToolUse", edit(repo, "auth/Filter.java", "a", "b"), cwd=repo))
    assert outcome == "ask" and "gate_bearing auth/Filter.java" in reason


def test_ask_prints_each_answer_then_the_decision(repo: Path, facts_policy: Path,
                                                  cli: Callable[..., Hooked]) -> None:
    out = cli("ask", "route_callers", "/v1/orders/{id}", "--path", JAVA, cwd=repo)
    lines = out.stdout.splitlines()
    assert out.code == 2
    assert lines[0].startswith("topology: yes — ") and "called by billing-worker" in lines[0]
    assert lines[-1].startswith("decision: CONFIRM: provider topology: route_callers /v1/orders/{id}")
    allowed = cli("ask", "route_gate", "/v1/orders/export", "--path", JAVA, cwd=repo)
    assert allowed.code == 0 and allowed.stdout.splitlines()[-1] == "decision: ALLOW"


RECORDER = """
import json, os, sys
request = json.load(sys.stdin)
with open(os.environ["RECORD"], "a") as fh:
    fh.write(json.dumps({"request": request, "cwd": os.getcwd(), "argv": sys.argv[1:]}) + "\\n")
print(json.dumps({"answer": "no"}))
"""


def test_request_fields_questions_and_working_directory(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                                                        write_policy: Callable[..., Path],
                                                        hook: Callable[..., Hooked]) -> None:
    record = tmp_path / "requests.jsonl"
    write_policy(repo, {"providers": [
        {"name": "all", "command": scripts("recorder", RECORDER) + " --flag 'two words'"},
        {"name": "routes-only", "command": scripts("recorder2", RECORDER), "questions": ["route_gate"]},
    ]})
    payload = edit(repo, "src/app.py", 'app.get("/v1/old")\napp.get("/v1/kept")', 'app.get("/v1/new")\napp.get("/v1/kept")')
    assert hook("claude", "PreToolUse", payload, cwd=repo, extra_env={"RECORD": str(record)}).code == 0
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    asked = sorted((s["argv"] != [], s["request"]["question"], s["request"]["subject"]) for s in seen)
    assert asked == [
        (False, "route_gate", "/v1/new"),
        (True, "gate_bearing", "src/app.py"),
        (True, "route_callers", "/v1/old"),
        (True, "route_gate", "/v1/new"),
    ]
    for s in seen:
        assert s["request"]["protocol"] == 1
        assert s["request"]["repo"] == str(repo) and s["cwd"] == str(repo)
        assert s["request"]["path"] == "src/app.py" and s["request"]["tool_name"] == "Edit"
    assert next(s["argv"] for s in seen if s["argv"]) == ["--flag", "two words"]  # split like a shell, no shell
    assert {tuple(sorted(s["request"])) for s in seen} == {tuple(sorted(documented("Request (stdin)")))}


def documented(heading: str) -> dict[str, str]:
    """The first two columns of the table under ``### heading`` in docs/gate.md's Providers section."""
    text = GATE_DOC.read_text()
    section = text[text.index("\n## Providers\n"):]
    section = section[:section.index("\n## ", 1)]
    part = section[section.index(f"### {heading}\n"):]
    part = part[:part.find("\n### ", 1) if "\n### " in part[1:] else len(part)]
    rows = [line.split("|")[1:3] for line in part.splitlines() if line.startswith("| `")]
    return {key.strip().strip("`"): second.strip() for key, second in rows}


def test_the_documented_protocol_is_the_one_spoken() -> None:
    """docs/gate.md's Providers section is the protocol's specification: it names what the code reads."""
    from gitvow_gate.gate_sections import ProviderEntry

    keys = documented("Policy keys")
    assert set(keys) == set(ProviderEntry.model_fields)
    assert keys["name"] == keys["command"] == "required" and keys["questions"] == "all three"
    assert keys["timeout"] == f"`{ProviderEntry.model_fields['timeout'].default:g}`"
    assert set(documented("Response (stdout)")) == {"answer", "evidence", "confidence"}
    assert all(f"`{answer}`" in GATE_DOC.read_text() for answer in providers.ANSWERS)


BAD_PROVIDERS = {
    "crash": ("import sys; sys.exit(3)", "exit status 3"),
    "hang": ("import time; time.sleep(60)", "no answer within 1s"),
    "garbage": ("print('yes please')", "output is not one JSON object"),
    "not-an-object": ("print('[1, 2]')", "output is not a JSON object"),
    "bad-answer": ("print('{\"answer\": \"maybe\"}')", "answer must be yes, no or unknown"),
    "bad-evidence": ("print('{\"answer\": \"no\", \"evidence\": \"one string\"}')", "evidence must be a list"),
    "huge": ("import sys\nwhile True: sys.stdout.write('x' * 65536)", "more than 256 KiB of output"),
    "missing": (None, "cannot start"),
}


@pytest.mark.parametrize("kind", sorted(BAD_PROVIDERS))
def test_a_failing_provider_means_confirm(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                                          kind: str) -> None:
    body, expected = BAD_PROVIDERS[kind]
    command = scripts(kind, body) if body is not None else str(tmp_path / "no-such-provider")
    policy = GatePolicy(source="test", providers=(Provider(kind, tuple(shlex.split(command)), ("gate_bearing",), 1),))
    call = GateCall("edit", "Edit", str(repo), edits=(FileEdit(str(repo / "src/app.py"), "a", "b"),))
    decision = decide(policy, call)
    assert decision.outcome == "confirm"
    assert f"provider {kind} failed for gate_bearing src/app.py" in decision.reason and expected in decision.reason


def test_a_failing_provider_through_the_hook(repo: Path, scripts: Callable[[str, str], str],
                                             write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"providers": [{"name": "crash", "command": scripts("crash", "import sys; sys.exit(3)")}]})
    outcome, reason = answer_of(hook("claude", "PreToolUse", edit(repo, "src/app.py", "a", "b"), cwd=repo))
    assert outcome == "ask" and "provider crash failed for gate_bearing src/app.py (exit status 3)" in reason


RENDEZVOUS = """
import json, os, sys, time
gate = os.environ["RENDEZVOUS"]
open(os.path.join(gate, sys.argv[1]), "w").close()
deadline = time.monotonic() + 20
while len(os.listdir(gate)) < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({"answer": "no" if len(os.listdir(gate)) >= 3 else "yes", "evidence": ["alone"]}))
"""


def test_providers_run_in_parallel(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                                   write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    # Each provider waits until all three are running. One at a time, the first would wait
    # past its timeout and fail (confirm); together, all three answer "no" (allow).
    gate = tmp_path / "rendezvous"
    gate.mkdir()
    command = scripts("rendezvous", RENDEZVOUS)
    write_policy(repo, {"providers": [
        {"name": n, "command": f"{command} {n}", "timeout": 10, "questions": ["gate_bearing"]} for n in "abc"
    ]})
    answer = hook("claude", "PreToolUse", edit(repo, "src/app.py", "a", "b"), cwd=repo,
                  extra_env={"RENDEZVOUS": str(gate)})
    assert answer == Hooked(0, "", "")
    assert sorted(p.name for p in gate.iterdir()) == ["a", "b", "c"]


def test_evidence_is_verbatim_and_bounded(repo: Path, scripts: Callable[[str, str], str],
                                          write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    body = "import json\nprint(json.dumps({'answer': 'yes', 'confidence': 0.9, " \
           "'evidence': ['whitelist: auth/A.java  (exact)'] + ['e%d ' % i + 'z' * 500 for i in range(20)]}))"
    write_policy(repo, {"providers": [{"name": "wordy", "command": scripts("wordy", body),
                                       "questions": ["gate_bearing"]}]})
    _, reason = answer_of(hook("claude", "PreToolUse", edit(repo, "src/app.py", "a", "b"), cwd=repo))
    assert "whitelist: auth/A.java  (exact)" in reason  # verbatim, spacing kept
    bullets = [line for line in reason.splitlines() if line.startswith("  - ")]
    assert len(bullets) == 9  # eight items and "(and 13 more)"
    assert bullets[-1].endswith("(and 13 more)")
    assert all(len(line) < 400 for line in bullets)


def test_codex_apply_patch_asks_per_file(repo: Path, tmp_path: Path, scripts: Callable[[str, str], str],
                                         write_policy: Callable[..., Path], hook: Callable[..., Hooked]) -> None:
    record = tmp_path / "requests.jsonl"
    write_policy(repo, {"providers": [{"name": "rec", "command": scripts("rec", RECORDER)}]})
    (repo / "old.py").write_text('ROUTE = "/v1/legacy"\n', encoding="utf-8")
    patch = "\n".join([
        "*** Begin Patch", "*** Update File: src/a.py", "@@", '-    "/v1/a"', '+    "/v1/b"',
        "*** Add File: src/new.py", '+X = "/v1/new"', "*** Delete File: old.py", "*** End Patch",
    ])
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse", "tool_name": "apply_patch",
               "tool_input": {"command": patch}}
    assert hook("codex", "PreToolUse", payload, cwd=repo, extra_env={"RECORD": str(record)}).code == 0
    asked = sorted((json.loads(x)["request"]["question"], json.loads(x)["request"]["subject"])
                   for x in record.read_text().splitlines())
    assert asked == [
        ("gate_bearing", "old.py"), ("gate_bearing", "src/a.py"), ("gate_bearing", "src/new.py"),
        ("route_callers", "/v1/a"), ("route_callers", "/v1/legacy"),
        ("route_gate", "/v1/b"), ("route_gate", "/v1/new"),
    ]


def test_cursor_delete_and_copilot_patch_reach_the_providers(repo: Path, tmp_path: Path,
                                                             scripts: Callable[[str, str], str],
                                                             write_policy: Callable[..., Path],
                                                             hook: Callable[..., Hooked]) -> None:
    record = tmp_path / "requests.jsonl"
    write_policy(repo, {"providers": [{"name": "rec", "command": scripts("rec", RECORDER),
                                       "questions": ["route_callers", "route_gate"]}]})
    (repo / "api.py").write_text('@app.get("/v1/orders")\n', encoding="utf-8")
    extra = {"RECORD": str(record)}
    deleted = hook("cursor", "preToolUse", {"tool_name": "Delete", "cwd": str(repo),
                                             "tool_input": {"file_path": str(repo / "api.py")}}, extra_env=extra)
    assert deleted.json() == {"permission": "allow"}
    patch = "*** Begin Patch\n*** Add File: web.py\n+ROUTE = '/v2/pay'\n*** End Patch"
    patched = hook("copilot", "preToolUse", {"cwd": str(repo), "toolName": "apply_patch", "toolArgs": patch},
                   extra_env=extra)
    assert patched.json() == {"permissionDecision": "allow"}
    seen = [json.loads(line)["request"] for line in record.read_text().splitlines()]
    assert [(r["question"], r["subject"], r["path"], r["tool_name"]) for r in seen] == [
        ("route_callers", "/v1/orders", "api.py", "Edit"),
        ("route_gate", "/v2/pay", "web.py", "apply_patch"),
    ]


def test_check_path_json_carries_each_answer(repo: Path, facts_policy: Path, cli: Callable[..., Hooked]) -> None:
    out = cli("check", "--json", "--path", "auth/Filter.java", cwd=repo)
    data = json.loads(out.stdout)
    assert out.code == 2 and data["decision"] == "confirm" and data["stage"] == "providers"
    (answer,) = data["answers"]
    assert answer["provider"] == "topology" and answer["question"] == "gate_bearing" and answer["answer"] == "yes"
    assert answer["evidence"][0] == "gate-bearing file (auth/*)"


def test_notebook_cell_replacement_asks_about_the_routes_it_removes(
        repo: Path, tmp_path: Path, scripts: Callable[[str, str], str], write_policy: Callable[..., Path],
        hook: Callable[..., Hooked]) -> None:
    record = tmp_path / "requests.jsonl"
    write_policy(repo, {"providers": [{"name": "rec", "command": scripts("rec", RECORDER),
                                       "questions": ["route_gate", "route_callers"]}]})
    notebook = {"cells": [{"id": "c1", "cell_type": "code", "source": ['requests.get(BASE + "/v1/old")\n']}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    payload = {"cwd": str(repo), "permission_mode": "default", "tool_name": "NotebookEdit",
               "tool_input": {"notebook_path": str(repo / "nb.ipynb"), "cell_id": "c1",
                              "new_source": 'requests.get(BASE + "/v2/new")', "edit_mode": "replace"}}
    assert hook("claude", "PreToolUse", payload, cwd=repo, extra_env={"RECORD": str(record)}).code == 0
    asked = sorted((json.loads(x)["request"]["question"], json.loads(x)["request"]["subject"])
                   for x in record.read_text().splitlines())
    assert asked == [("route_callers", "/v1/old"), ("route_gate", "/v2/new")]
