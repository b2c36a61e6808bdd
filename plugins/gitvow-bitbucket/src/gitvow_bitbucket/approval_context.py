"""What Bitbucket Cloud says about a staged merge, for the human approving it.

The adapter's part of :mod:`gitvow.approval_context`, for ``POST
/2.0/repositories/{workspace}/{slug}/pullrequests/{id}/merge``: the pull request (title,
author, branches, the head commit, state, approvals), the statuses of its head and the files
it changes with their line counts (``…/diffstat``). Not read: the diff itself (Bitbucket
answers ``…/diff`` with a redirect; the files are listed and the human is told), a creation's
comparison, and Data Center. Bitbucket's pull request names its head commit by a short hash;
that is the head shown and asked for again before the send.
"""

from __future__ import annotations

import re
from typing import Any

from gitvow.approval_context import (
    MERGE,
    ApprovalContext,
    Ask,
    Changes,
    ContextError,
    FileChange,
    PullRequest,
    Subject,
    answer_json,
    kind_of,
    optional_json,
)
from gitvow.request import Request

_MERGE = re.compile(r"^/2\.0/repositories/([^/]+)/([^/]+)/pullrequests/(\d+)/merge$")
_CREATE = re.compile(r"^/2\.0/repositories/([^/]+)/([^/]+)/pullrequests$")


def subject(request: Request, operations: tuple[str, ...]) -> Subject | None:
    kind = kind_of(operations)
    path = request.path.rstrip("/")
    merge = _MERGE.match(path)
    if kind == MERGE and merge is not None:
        return Subject(MERGE, repo=f"{merge.group(1)}/{merge.group(2)}", number=int(merge.group(3)))
    created = _CREATE.match(path)
    if kind is not None and created is not None:
        return Subject(kind, repo=f"{created.group(1)}/{created.group(2)}")
    if kind is not None and path.startswith("/rest/api/"):
        return Subject(kind)  # Data Center: named, and answered with what is not read yet
    return None


def _statuses(answer: Any) -> str:
    values = (answer or {}).get("values") if isinstance(answer, dict) else None
    if not values:
        return "none reported"
    return "statuses: " + ", ".join(f"{v.get('name') or v.get('key')} {str(v.get('state', '')).lower()}"
                                    for v in values[:10])


def _files(answer: Any) -> tuple[FileChange, ...]:
    values = answer.get("values") if isinstance(answer, dict) else None
    return tuple(FileChange(str((item.get("new") or item.get("old") or {}).get("path", "?")), item.get("lines_added"),
                            item.get("lines_removed"), str(item.get("status", "")))
                 for item in values or ())


def context(request: Request, what: Subject, ask: Ask) -> ApprovalContext:
    if what.kind != MERGE or what.number is None:
        raise ContextError("gitvow-bitbucket does not read this yet (a creation's comparison, or Data Center): "
                           "read the request above")
    root = f"/2.0/repositories/{what.repo}/pullrequests/{what.number}"
    notes: list[str] = []
    pr = answer_json(ask, root)
    head_sha = str(pr["source"]["commit"]["hash"])
    approved = [str((p.get("user") or {}).get("display_name", "?")) for p in pr.get("participants") or ()
                if p.get("approved")]
    pull = PullRequest(
        number=int(pr["id"]), title=str(pr.get("title", "")), author=str((pr.get("author") or {}).get("display_name", "")),
        head=str(pr["source"]["branch"]["name"]), base=str(pr["destination"]["branch"]["name"]), head_sha=head_sha,
        state=str(pr.get("state", "")).lower(), mergeable="not reported by Bitbucket",
        checks=_statuses(optional_json(ask, f"{root}/statuses", notes)),
        reviews=("approved by " + ", ".join(approved)) if approved else "no approvals",
        url=str(((pr.get("links") or {}).get("html") or {}).get("href", "")),
        merged=pr["state"] == "MERGED" if isinstance(pr.get("state"), str) else None,
    )
    files = _files(optional_json(ask, f"{root}/diffstat", notes))
    notes.append("Bitbucket's diff is not fetched: the files are listed")
    return ApprovalContext(MERGE, repo=what.repo, pull=pull, changes=Changes(files), head_sha=head_sha,
                           head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
