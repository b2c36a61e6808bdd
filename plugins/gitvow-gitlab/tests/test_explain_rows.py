"""The default table (docs/policy.md), GitLab's wire shapes, through the installed ``gitvow explain`` at every mode.

One subprocess answers every (row, mode, converse) line, as an operator would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from gitvow.modes import MODE_NAMES
from gitvow_gitsmart.adapter import push_body

API = "https://gitlab.com/api/v4/projects/group%2Fproj"
GQL = "https://gitlab.com/api/graphql"
GIT = "https://gitlab.com/group/proj.git"


def gql(query: str) -> str:
    return json.dumps({"query": query})


# (operation(s), method, url, body, default rule)
ROWS: list[tuple[list[str], str, str, str | bytes, str]] = [
    (["read"], "GET", f"{API}/merge_requests", "", "advisory"),
    (["read"], "POST", GQL, gql("query { currentUser { id } }"), "advisory"),
    (["auth.login"], "POST", "https://gitlab.com/oauth/token", "grant_type=x", "advisory"),
    (["git.fetch"], "POST", f"{GIT}/git-upload-pack", "0000", "advisory"),
    (["git.push"], "POST", f"{GIT}/git-receive-pack", push_body(("a" * 40, "b" * 40, "refs/heads/main")),
     "issues_and_prs"),
    (["ref.write"], "POST", f"{API}/repository/branches", '{"branch": "x", "ref": "main"}', "issues_and_prs"),
    (["branch.protect"], "POST", f"{API}/protected_branches", '{"name": "main"}', "issues_and_prs"),
    (["issue.create"], "POST", f"{API}/issues", '{"title": "t"}', "issues_only"),
    (["issue.create"], "POST", GQL, gql('mutation { createIssue(input: {projectPath: "group/proj", title: "t"}) { errors } }'),
     "issues_only"),
    (["issue.edit"], "PUT", f"{API}/issues/1", '{"state_event": "close"}', "issues_only"),
    (["issue.comment"], "POST", f"{API}/issues/1/notes", '{"body": "x"}', "issues_only or converse"),
    (["issue.comment"], "POST", f"{API}/merge_requests/1/notes", '{"body": "x"}', "issues_only or converse"),
    (["issue.comment"], "POST", GQL, gql('mutation { createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) '
                                         "{ errors } }"), "issues_only or converse"),
    (["label.add"], "PUT", f"{API}/issues/1", '{"add_labels": "bug"}', "issues_only"),
    (["issue.relate"], "POST", f"{API}/issues/1/links", '{"target_project_id": 2, "target_issue_iid": 3}', "issues_only"),
    (["pr.create"], "POST", f"{API}/merge_requests", '{"title": "t"}', "relay(approval)"),
    (["pr.create"], "POST", GQL, gql('mutation { mergeRequestCreate(input: {projectPath: "group/proj", title: "t", '
                                     'sourceBranch: "a", targetBranch: "b"}) { errors } }'), "relay(approval)"),
    (["pr.edit"], "PUT", f"{API}/merge_requests/1", '{"title": "t"}', "issues_and_prs"),
    (["pr.edit"], "POST", GQL, gql('mutation { mergeRequestSetDraft(input: {projectPath: "group/proj", iid: "1", '
                                   "draft: true}) { errors } }"), "issues_and_prs"),
    (["pr.review"], "POST", f"{API}/merge_requests/1/approve", "{}", "issues_and_prs or converse"),
    (["pr.update_branch"], "PUT", f"{API}/merge_requests/1/rebase", "{}", "issues_prs_merge"),
    (["pr.merge"], "PUT", f"{API}/merge_requests/1/merge", "{}", "relay(approval)"),
    (["pr.merge"], "POST", GQL, gql('mutation { mergeRequestAccept(input: {projectPath: "group/proj", iid: "1"}) '
                                    "{ errors } }"), "relay(approval)"),
    (["label.manage"], "POST", f"{API}/labels", '{"name": "x", "color": "#fff"}', "deny"),
    (["unknown"], "POST", f"{API}/no-such-route", "{}", "deny"),
    (["unknown"], "POST", GQL, gql("mutation { destroyNote(input: {}) { errors } }"), "deny"),
]
RELAYS = {"relay(approval)": "approval"}


def expected(rule: str, mode: str, converse: bool) -> str:
    if rule in RELAYS:
        return "relay"
    if rule == "deny":
        return "deny"
    needs, _, capability = rule.partition(" or ")
    allowed = MODE_NAMES.index(mode) >= MODE_NAMES.index(needs) or (capability == "converse" and converse)
    return "allow" if allowed else "deny"


def test_default_rows_at_every_mode() -> None:
    grants = [(mode, converse) for mode in MODE_NAMES for converse in (False, True)]
    lines: list[dict[str, Any]] = [
        {"method": method, "url": url, **_body(body), "mode": mode, "capabilities": ["converse"] if converse else []}
        for _, method, url, body, _ in ROWS
        for mode, converse in grants
    ]
    result = subprocess.run(
        [sys.executable, "-m", "gitvow.cli.main", "explain", "--jsonl"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, env=dict(os.environ), timeout=120, check=True,
    )
    answers = iter(json.loads(line) for line in result.stdout.splitlines())
    for ops, method, url, _, rule in ROWS:
        for mode, converse in grants:
            answer = next(answers)
            where = f"{method} {url} at {mode}{' +converse' if converse else ''}: {answer}"
            assert answer["adapter"] == "gitlab" and answer["operations"] == ops, where
            verdict = expected(rule, mode, converse)
            assert answer["verdict"] == verdict, where
            if verdict == "relay":
                assert answer["reason"] == "hard_deny" and answer["relay"] == RELAYS[rule], where
                assert "needs a human's approval" in answer["message"], where  # staged: no tool to avoid
            elif verdict == "deny":
                assert answer["message"].endswith(f"reason={answer['reason']}") and "\n" not in answer["message"], where
            if url.startswith(API) or url.startswith(GIT):
                assert answer["repo"] == "group/proj", where
    assert next(answers, None) is None


def _body(body: str | bytes) -> dict[str, str]:
    """A JSON line's body: text as ``body``, a binary push (with its pack) as ``body_base64``."""
    import base64

    return {"body_base64": base64.b64encode(body).decode()} if isinstance(body, bytes) else {"body": body}
