"""GitLab quick actions: every command of the derived table, GitLab's extraction rules, every carrier.

A note or description is the comment plus every operation its quick actions carry; the
evaluator then refuses the whole request unless every operation is allowed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from gitvow.request import Classification, Request
from gitvow_gitlab.adapter import GitLabAdapter
from gitvow_gitlab.quick_actions import CONTEXTS, command_names, parse_table, table

API = "https://gitlab.com/api/v4/projects/team%2Fapp"
GRAPHQL = "https://gitlab.com/api/graphql"
NOTE_ROUTES = {
    "issue": (f"{API}/issues/3/notes", "body"),
    "merge_request": (f"{API}/merge_requests/7/notes", "body"),
    "commit": (f"{API}/repository/commits/{'a' * 40}/comments", "note"),
}
ADAPTER = GitLabAdapter()
ROWS = sorted({(action.name, alias) for action in table().values() for alias in (action.name, *action.aliases)})


def post(url: str, payload: object, *, content_type: str = "application/json") -> Classification:
    body = json.dumps(payload).encode() if content_type == "application/json" else str(payload).encode()
    return ADAPTER.classify(Request.from_url("POST", url, headers={"content-type": content_type}, body=body))


def note(context: str, text: str) -> Classification:
    url, key = NOTE_ROUTES[context]
    return post(url, {key: text})


@pytest.mark.parametrize(("name", "spelling"), ROWS, ids=[f"/{spelling}" for _, spelling in ROWS])
def test_every_quick_action_is_its_operations(name: str, spelling: str) -> None:
    action = table()[name]
    for context in CONTEXTS:
        result = note(context, f"Done here.\n/{spelling} some argument\n")
        expected = ("issue.comment", *(action.operations[context] or ()))
        assert result.operations == tuple(dict.fromkeys(expected)), (context, result)
        if "unknown" in expected:
            assert action.reason and action.reason in result.note


def test_the_table_is_complete_and_well_formed() -> None:
    rows = table()
    # The issue's named examples, and the derivation's spot checks.
    for name in ("merge", "approve", "close", "rebase", "create_merge_request", "move", "clone", "label",
                 "assign", "unassign", "relabel", "tag", "react", "award", "wip", "request_review"):
        assert name in rows
    assert rows["merge"].operations["merge_request"] == ("pr.merge",)
    assert rows["create_merge_request"].operations["issue"] == ("pr.create", "ref.write")
    assert rows["rebase"].operations["merge_request"] == ("pr.update_branch",)
    with pytest.raises(ValueError, match="not an operation"):
        parse_table("merge\t-\t-\tpr.merrge\t-\t-\n")
    with pytest.raises(ValueError, match="listed twice"):
        parse_table("merge\t-\t-\tpr.merge\t-\t-\nmerge\t-\t-\tpr.merge\t-\t-\n")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("/merge", ["merge"]),
        ("/MERGE", ["merge"]),
        ("/Merge \n", ["merge"]),
        ("/rebaſe", ["rebase"]),  # long s folds to s, as Ruby's case-insensitive match does
        ("ok\r\n/merge\r\n", ["merge"]),
        ("text /merge", []),
        ("  /merge", []),
        ("/merge/now", []),
        ("/merge! now", []),
        ("/usr/bin/env is missing", []),
        ("```\n/merge\n```", []),
        ("```bash\n/merge\n```\n/close", ["close"]),
        ("see `this\n/merge\nthat` ok", []),
        ("<details>\n/merge\n</details>", []),
        (">>>\n/merge\n>>>", []),
        ("> /merge", []),
        ("/label ~a\n/assign me\n/merge", ["label", "assign", "merge"]),
        ("/merge\t\n", ["merge"]),
    ],
)
def test_extraction_follows_gitlab(text: str, names: list[str]) -> None:
    assert command_names(text) == names


def test_descriptions_on_create_and_edit() -> None:
    created = post(f"{API}/issues", {"title": "x", "description": "Plan\n/create_merge_request fix-it"})
    assert created.operations == ("issue.create", "pr.create", "ref.write")
    edited = ADAPTER.classify(Request.from_url("PUT", f"{API}/merge_requests/7", headers={"content-type": "application/json"},
                                               body=json.dumps({"description": "/merge"}).encode()))
    assert "pr.merge" in edited.operations and "pr.edit" in edited.operations
    opened = post(f"{API}/merge_requests", {"source_branch": "a", "target_branch": "main", "title": "t",
                                            "description": "/approve"})
    assert opened.operations == ("pr.create", "pr.review")


def test_discussions_draft_notes_and_epics() -> None:
    assert "pr.merge" in post(f"{API}/merge_requests/7/discussions", {"body": "/merge"}).operations
    assert "pr.merge" in post(f"{API}/merge_requests/7/discussions/abc/notes", {"body": "/merge"}).operations
    assert "pr.merge" in post(f"{API}/merge_requests/7/draft_notes", {"note": "/merge"}).operations
    epic = post("https://gitlab.com/api/v4/groups/team/epics/2/notes", {"body": "/move other/project"})
    assert epic.is_unknown and "crosses repositories" in epic.note


def test_every_carrier_of_the_text_is_read() -> None:
    form = post(f"{API}/merge_requests/7/notes", "body=%2Fmerge", content_type="application/x-www-form-urlencoded")
    assert "pr.merge" in form.operations
    query = ADAPTER.classify(Request.from_url("POST", f"{API}/merge_requests/7/notes?body=%2Fmerge"))
    assert "pr.merge" in query.operations
    escaped = ADAPTER.classify(Request.from_url("POST", f"{API}/merge_requests/7/notes", headers={"content-type": "application/json"},
                                                body=b'{"body": "\\u002fmerge"}'))
    assert "pr.merge" in escaped.operations
    nested = post(f"{API}/merge_requests/7/notes", {"body": ["/merge"]})
    assert "pr.merge" in nested.operations
    unreadable = ADAPTER.classify(Request.from_url("POST", f"{API}/merge_requests/7/notes",
                                                   headers={"content-type": "multipart/form-data; boundary=x"},
                                                   body=b"--x\r\n"))
    assert unreadable.is_unknown
    gzipped = ADAPTER.classify(Request.from_url("POST", f"{API}/merge_requests/7/notes", body=b'{"body": "ok"}',
                                                headers={"content-type": "application/json", "content-encoding": "br"}))
    assert gzipped.is_unknown  # GitLab might undo an encoding gitvow does not: unread is refused


def test_unknown_quick_action_is_unknown() -> None:
    result = note("issue", "/frobnicate now")
    assert result.is_unknown and "/frobnicate" in result.note


def test_plain_comments_stay_comments() -> None:
    assert note("merge_request", "Looks good; I will /merge later? no: merge/ later").operations == ("issue.comment",)
    assert note("issue", "see /usr/bin/env\n  /close (indented: GitLab ignores it)").operations == ("issue.comment",)


def gql(query: str, variables: dict[str, object] | None = None) -> Classification:
    return post(GRAPHQL, {"query": query, "variables": variables or {}})


def test_graphql_create_note_and_descriptions() -> None:
    mr_note = 'mutation { createNote(input: {noteableId: "gid://gitlab/MergeRequest/1", body: "/merge"}) { errors } }'
    assert gql(mr_note).operations == ("issue.comment", "pr.merge")
    issue_note = 'mutation { createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "/merge"}) { errors } }'
    assert gql(issue_note).operations == ("issue.comment",)  # GitLab runs /merge only on merge requests
    by_variable = "mutation($i: CreateNoteInput!) { createNote(input: $i) { errors } }"
    result = gql(by_variable, {"i": {"noteableId": "gid://gitlab/MergeRequest/1", "body": "ok\n/merge"}})
    assert result.operations == ("issue.comment", "pr.merge")
    opaque = gql(by_variable, {"i": {"noteableId": "x", "body": "/close"}})
    assert opaque.operations == ("issue.comment", "issue.edit", "pr.edit")  # context unknown: every context's
    defaulted = 'mutation($b: String = "/merge") { createNote(input: {noteableId: "gid://gitlab/MergeRequest/1", body: $b}) { errors } }'
    assert "pr.merge" in gql(defaulted).operations
    issue = 'mutation { createIssue(input: {projectPath: "team/app", title: "t", description: "/move elsewhere"}) { errors } }'
    created = gql(issue)
    assert created.is_unknown and created.unknown_code == "graphql_mutation" and "/move" in created.note
    mr = 'mutation { mergeRequestUpdate(input: {projectPath: "team/app", iid: "1", description: "/rebase"}) { errors } }'
    assert gql(mr).operations == ("pr.edit", "pr.update_branch")


def _script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "derive_quick_actions.py"
    spec = importlib.util.spec_from_file_location("derive_quick_actions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE_DOC = """
## Issues, merge requests, and epics

| Command | Issue | Merge request | Epic | Action |
|:--|:--|:--|:--|:--|
| `/merge` | No | Yes | No | Merge. |
| `/label ~a` or `/labels ~a` | Yes | Yes | Yes | Add labels. |
| `/zzz_new` | Yes | No | No | A command the table lacks. |

## Commit comments

| Command | Action |
|:--|:--|
| `/tag v1.2.3 <message>` | Creates a tag. |
"""


def test_derive_script_reads_the_docs_and_checks_the_table(tmp_path: Path) -> None:
    script = _script()
    inventory = script.inventory(SAMPLE_DOC)
    assert inventory == {"merge": {"merge_request"}, "label": {"issue", "merge_request"},
                         "labels": {"issue", "merge_request"}, "zzz_new": {"issue"}, "tag": {"commit"}}
    doc = tmp_path / "quick_actions.md"
    doc.write_text(SAMPLE_DOC)
    assert script.main(["--check", str(doc)]) == 1  # /zzz_new is missing from the table
    doc.write_text(SAMPLE_DOC.replace("| `/zzz_new` | Yes | No | No | A command the table lacks. |\n", ""))
    assert script.main(["--check", str(doc)]) == 0


def test_every_command_runs_somewhere() -> None:
    """Each row names operations for at least one context (a row of '-' would be a silent pass)."""
    for name, action in table().items():
        assert any(ops for ops in action.operations.values()), name


def test_the_agent_gate_reads_quick_actions_in_glab_and_mcp_calls() -> None:
    """The early boundary sees the same: ``glab mr note -m /merge`` and an MCP note are merges."""
    assert ADAPTER.classify_command(["glab", "mr", "note", "7", "-m", "LGTM\n/merge"]).operations == (  # type: ignore[union-attr]
        "issue.comment", "pr.merge")
    assert ADAPTER.classify_command(["glab", "mr", "note", "7", "-m", "LGTM"]).operations == ("issue.comment",)  # type: ignore[union-attr]
    created = ADAPTER.classify_command(["glab", "issue", "create", "-t", "t", "-d", "/create_merge_request x"])
    assert created is not None and created.operations == ("issue.create", "pr.create", "ref.write")
    note = ADAPTER.classify_mcp_tool("create_note", {"project_id": "team/app", "noteable_type": "merge_request",
                                                      "noteable_iid": 7, "body": "/merge"})
    assert note is not None and note.operations == ("issue.comment", "pr.merge")
    issue_note = ADAPTER.classify_mcp_tool("create_issue_note", {"project_id": "team/app", "body": "/merge"})
    assert issue_note is not None and issue_note.operations == ("issue.comment",)  # /merge runs on merge requests only
    rebase = ADAPTER.classify_mcp_tool("create_merge_request_note", {"project_id": "team/app", "body": "ok\n/rebase"})
    assert rebase is not None and rebase.operations == ("issue.comment", "pr.update_branch")
