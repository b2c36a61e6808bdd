"""What GitLab says about a staged merge or merge-request creation, and the head a merge is pinned to.

The adapter's part of :mod:`gitvow.approval_context`: a merge by REST (``PUT
…/merge_requests/3/merge``), by GraphQL ``mergeRequestAccept`` or by a ``/merge`` quick action
in a note, and a creation (``POST …/merge_requests``: the comparison of its branches). Only
the REST merge carries a pin (``sha``); a note cannot, so the proxy asks for the head right
before it sends one.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote

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
    patch_counts,
)
from gitvow.graphql import GraphQLReader, GraphQLRefused
from gitvow.request import Request

_READER = GraphQLReader()
_MR = re.compile(r"/projects/([^/]+)/merge_requests(?:/(\d+)/(merge|notes))?$")


def _fields(request: Request) -> dict[str, Any]:
    query = dict(parse_qsl(request.query))
    try:
        data = json.loads(request.body) if request.body else {}
    except (ValueError, UnicodeDecodeError):
        data = {}
    return {**query, **data} if isinstance(data, dict) else query


def _accept_input(body: bytes) -> dict[str, Any] | None:
    """The arguments of the document's one ``mergeRequestAccept`` (its ``input`` merged in)."""
    try:
        request = _READER.read(body)
    except GraphQLRefused:
        return None
    tops = [top for top in request.operation.fields if top.name == "mergeRequestAccept"]
    if len(tops) != 1:
        return None
    found = {name: tops[0].argument(name, request.variables) for name in tops[0].arguments}
    nested = found.get("input")
    return {**found, **nested} if isinstance(nested, dict) else found


def subject(request: Request, operations: tuple[str, ...]) -> Subject | None:
    kind = kind_of(operations)
    if kind is None:
        return None
    path = request.path.rstrip("/")
    if path.endswith("/graphql"):
        found = _accept_input(request.body)
        if found and found.get("projectPath") and found.get("iid"):
            return Subject(MERGE, project=quote(str(found["projectPath"]), safe=""), number=int(str(found["iid"])))
        return None
    match = _MR.search(path)
    if match is None:
        return None
    project = match.group(1)
    if match.group(2):
        return Subject(MERGE, number=int(match.group(2)), project=project)
    fields = _fields(request)
    return Subject(kind, project=project, head=str(fields.get("source_branch", "")),
                   base=str(fields.get("target_branch", "")))


def _changes(items: Any) -> tuple[tuple[FileChange, ...], str]:
    files, patches = [], []
    for item in items if isinstance(items, list) else []:
        name = str(item.get("new_path") or item.get("old_path") or "?")
        patch = str(item.get("diff") or "")
        added, removed = patch_counts(patch)
        status = "added" if item.get("new_file") else "removed" if item.get("deleted_file") else \
            "renamed" if item.get("renamed_file") else "modified"
        files.append(FileChange(name, added, removed, status))
        patches.append(f"diff --git a/{item.get('old_path', name)} b/{name}\n{patch}")
    return tuple(files), "".join(patches)


def context(request: Request, what: Subject, ask: Ask) -> ApprovalContext:
    notes: list[str] = []
    api = request.path.split("/api/v4/", 1)[0] + "/api/v4" if "/api/v4/" in request.path else \
        request.path.split("/api/graphql", 1)[0] + "/api/v4"
    if what.kind == MERGE:
        mr_path = f"{api}/projects/{what.project}/merge_requests/{what.number}"
        mr = answer_json(ask, mr_path)
        refs = mr.get("references") or {}
        repo = str(refs.get("full", "")).rsplit("!", 1)[0].lower() or None
        pipeline = mr.get("head_pipeline") or mr.get("pipeline") or {}
        approvals = optional_json(ask, f"{mr_path}/approvals", notes)
        approved = [a["user"]["username"] for a in (approvals or {}).get("approved_by", []) if a.get("user")]
        pull = PullRequest(
            number=int(mr["iid"]), title=str(mr.get("title", "")), author=str((mr.get("author") or {}).get("username", "")),
            head=str(mr.get("source_branch", "")), base=str(mr.get("target_branch", "")), head_sha=str(mr.get("sha", "")),
            state=str(mr.get("state", "")) + (" (draft)" if mr.get("draft") else ""),
            mergeable=str(mr.get("detailed_merge_status") or mr.get("merge_status") or "unknown"),
            checks=f"pipeline {pipeline.get('status')}" if pipeline else "no pipeline",
            reviews=("approved by " + ", ".join(approved)) if approved else "no approvals",
            url=str(mr.get("web_url", "")), merged=mr.get("state") == "merged" if mr.get("state") else None,
        )
        files, diff = _changes(answer_json(ask, f"{mr_path}/diffs?per_page=100"))
        return ApprovalContext(MERGE, repo=repo, pull=pull, changes=Changes(files, diff), head_sha=pull.head_sha,
                               head=pull.head, base=pull.base, number=pull.number, notes=tuple(notes))
    project = answer_json(ask, f"{api}/projects/{what.project}")
    repo = str(project.get("path_with_namespace", "")).lower() or None
    compare = answer_json(ask, f"{api}/projects/{what.project}/repository/compare?from={quote(what.base, safe='')}"
                               f"&to={quote(what.head, safe='')}&straight=false")
    files, diff = _changes(compare.get("diffs"))
    head_sha = str((compare.get("commit") or {}).get("id", ""))
    return ApprovalContext(CREATE, repo=repo, changes=Changes(files, diff, False, len(compare.get("commits") or [])),
                           head_sha=head_sha, head=what.head, base=what.base, notes=tuple(notes))


def pin(request: Request, head_sha: str) -> bytes | None:
    """``sha`` in the REST merge's JSON body (kept when the agent set one); None for anything
    else (a ``/merge`` note, GraphQL, a body that is no JSON object)."""
    match = _MR.search(request.path.rstrip("/"))
    if request.method != "PUT" or match is None or match.group(3) != "merge":
        return None
    try:
        data = json.loads(request.body) if request.body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("sha"):
        return request.body
    return json.dumps({**data, "sha": head_sha}).encode()
