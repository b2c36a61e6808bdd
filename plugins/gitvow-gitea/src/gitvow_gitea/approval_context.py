"""What Gitea or Forgejo says about a staged merge or pull-request creation, and the merge's pin.

The adapter's part of :mod:`gitvow.approval_context`: ``POST …/pulls/4/merge`` (pinned by
``head_commit_id``) and ``POST …/pulls`` (the comparison of its branches: Gitea's API lists
the files of a comparison but gives no diff of one, and the human is told so).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from gitvow.approval_context import (
    CREATE,
    MERGE,
    ApprovalContext,
    Ask,
    Changes,
    FileChange,
    PullRequest,
    Subject,
    answer_json,
    kind_of,
    optional_json,
)
from gitvow.request import Request

_PULL = re.compile(r"/repos/([^/]+)/([^/]+)/pulls(?:/(\d+)/merge)?$")


def subject(request: Request, operations: tuple[str, ...]) -> Subject | None:
    kind = kind_of(operations)
    match = _PULL.search(request.path.rstrip("/")) if kind is not None else None
    if kind is None or match is None:
        return None
    repo = f"{match.group(1)}/{match.group(2)}".lower()
    if match.group(3):
        return Subject(MERGE, repo=repo, number=int(match.group(3)))
    try:
        fields = json.loads(request.body) if request.body else {}
    except (ValueError, UnicodeDecodeError):
        fields = {}
    if not isinstance(fields, dict):
        fields = {}
    return Subject(kind, repo=repo, head=str(fields.get("head", "")), base=str(fields.get("base", "")))


def _pull(ask: Ask, root: str, number: int | None, notes: list[str]) -> PullRequest:
    pr = answer_json(ask, f"{root}/pulls/{number}")
    head_sha = str(pr["head"]["sha"])
    status = optional_json(ask, f"{root}/commits/{head_sha}/status", notes)
    statuses = (status or {}).get("statuses") or []
    reviews = optional_json(ask, f"{root}/pulls/{number}/reviews", notes) or []
    states = [f"{str(r.get('state', '')).lower()} by {(r.get('user') or {}).get('login', '?')}" for r in reviews
              if r.get("state") in ("APPROVED", "REQUEST_CHANGES")]
    checks = "none reported"
    if statuses:
        checks = f"statuses {(status or {}).get('state')}: " + ", ".join(
            f"{s.get('context')} {s.get('status') or s.get('state')}" for s in statuses[:10])
    return PullRequest(
        number=int(pr["number"]), title=str(pr.get("title", "")), author=str((pr.get("user") or {}).get("login", "")),
        head=str(pr["head"].get("ref", "")), base=str(pr["base"].get("ref", "")), head_sha=head_sha,
        state=str(pr.get("state", "")), mergeable="yes" if pr.get("mergeable") else "no", checks=checks,
        reviews=", ".join(states) or "no reviews", url=str(pr.get("html_url", "")),
        merged=pr.get("merged") if isinstance(pr.get("merged"), bool) else None,
    )


def _files(items: Any) -> tuple[FileChange, ...]:
    return tuple(FileChange(str(f.get("filename", "?")), f.get("additions"), f.get("deletions"), str(f.get("status", "")))
                 for f in (items if isinstance(items, list) else []))


def context(request: Request, what: Subject, ask: Ask) -> ApprovalContext:
    notes: list[str] = []
    api = request.path.split("/api/v1/", 1)[0] + "/api/v1"
    root = f"{api}/repos/{what.repo}"
    if what.kind == MERGE:
        pull = _pull(ask, root, what.number, notes)
        files = _files(answer_json(ask, f"{root}/pulls/{what.number}/files?limit=100"))
        code, text = ask("GET", f"{root}/pulls/{what.number}.diff", b"", "text/plain")
        if code != 200:
            notes.append(f"the diff answered {code}")
        diff = text.decode("utf-8", "replace") if code == 200 else ""
        return ApprovalContext(MERGE, repo=what.repo, pull=pull, changes=Changes(files, diff), head_sha=pull.head_sha,
                               head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    compare = answer_json(ask, f"{root}/compare/{quote(what.base, safe='')}...{quote(what.head, safe=':')}")
    commits = compare.get("commits") or []
    head_sha = str(commits[-1].get("sha", "")) if commits else ""
    return ApprovalContext(CREATE, repo=what.repo,
                           changes=Changes(_files(compare.get("files")), "", False,
                                           compare.get("total_commits", len(commits))),
                           head_sha=head_sha, head=what.head, base=what.base,
                           notes=("Gitea's API gives no diff of a comparison: the files are listed",))


def pin(request: Request, head_sha: str) -> bytes | None:
    """``head_commit_id`` in the merge's JSON body (kept when the agent set one); None for
    anything else (a cancelled scheduled merge, a body that is no JSON object)."""
    match = _PULL.search(request.path.rstrip("/"))
    if request.method != "POST" or match is None or not match.group(3):
        return None
    try:
        data = json.loads(request.body) if request.body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("head_commit_id"):
        return request.body
    return json.dumps({**data, "head_commit_id": head_sha}).encode()
