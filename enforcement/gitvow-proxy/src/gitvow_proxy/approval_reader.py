"""What a staged request will make the forge do, read the way the forge reads it.

A human approves what this module shows, so it must never differ from what the forge acts on.
It reads with the same readers the policy stage's adapters use, and only where the forge looks:

- a REST JSON body's **top-level** keys (``{"meta": {"title": …}}`` is not a title: the forge
  ignores it), a form body's fields, and the **query string** (GitLab reads ``source_branch``
  from a POST's query as readily as from its body; when both say something different, both are
  shown and the write is marked ambiguous);
- a GraphQL document through :class:`gitvow.graphql.GraphQLReader`: the selected operation's
  top-level fields, each its **own write** (two aliased ``createPullRequest`` fields are two
  pull requests), arguments with the **declared** variables substituted and their defaults
  applied (an undeclared variable is never read: the server rejects the document).

:func:`describe` returns ``{"writes": [...], **first write's fields}``; each write names its
field (GraphQL) and the labelled fields a human judges (title, body, head, base, merge method,
expected head, the pull request it acts on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from gitvow.graphql import GraphQLReader, GraphQLRefused
from gitvow.request import Request

#: The forge's field names → what the human reads. Only these are shown.
FIELDS = {
    "title": "title",
    "body": "body",
    "description": "body",
    "head": "head",
    "headRefName": "head",
    "source_branch": "head",
    "sourceBranch": "head",
    "base": "base",
    "baseRefName": "base",
    "target_branch": "base",
    "targetBranch": "base",
    "merge_method": "merge method",
    "mergeMethod": "merge method",
    "Do": "merge method",
    "squash": "squash",
    "commit_title": "commit title",
    "commitHeadline": "commit title",
    "MergeTitleField": "commit title",
    "draft": "draft",
    "sha": "expected head",
    "expectedHeadOid": "expected head",
    "head_commit_id": "expected head",
    "pullRequestId": "pull request id",
    "repositoryId": "repository id",
    "issue": "issue",
    "issue_number": "issue",
    "merge_when_pipeline_succeeds": "when pipeline succeeds",
    "pullNumber": "number",
    "pull_number": "number",
    "owner": "owner",
    "repo": "repository name",
    "auto_merge": "when pipeline succeeds",
}
#: Bodies larger than this are not read (the summary then says so).
READ_LIMIT = 1024 * 1024
_READER = GraphQLReader(body_limit=READ_LIMIT)
_SCALARS = (str, bool, int, float)


def _labelled(data: Mapping[str, Any]) -> dict[str, Any]:
    """The labelled top-level fields of ``data`` (first spelling wins, as the forge's own
    parameter order would; nested objects are never looked into)."""
    found: dict[str, Any] = {}
    for key, value in data.items():
        label = FIELDS.get(key)
        if label is not None and isinstance(value, _SCALARS) and label not in found:
            found[label] = value
    return found


def _rest(method: str, url: str, content_type: str, body: bytes) -> list[dict[str, Any]]:
    query = _labelled(dict(parse_qsl(urlsplit(url).query, keep_blank_values=True)))
    data: Any = None
    if body and ("json" in content_type or body.lstrip()[:1] in (b"{", b"[")):
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            data = None
    elif body and "x-www-form-urlencoded" in content_type:
        data = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    mcp = _mcp(data)
    if mcp is not None:
        return mcp
    fields = _labelled(data) if isinstance(data, Mapping) else {}
    write: dict[str, Any] = dict(query)
    for label, value in fields.items():
        if label in query and query[label] != value:
            write[label] = f"{query[label]!s} (query string) / {value!s} (body)"
            write["ambiguous"] = "the query string and the body disagree; the forge reads one of them"
        else:
            write[label] = value
    if body and data is None:
        write["unreadable"] = "the body is not JSON or a form: read it below"
    return [write]


def _mcp(data: Any) -> list[dict[str, Any]] | None:
    """An MCP ``tools/call`` (or a batch of them): each call a write, read from its
    ``arguments`` (what the server acts on); None when ``data`` is not JSON-RPC."""
    calls = data if isinstance(data, list) else [data]
    if not calls or not all(isinstance(c, Mapping) and "jsonrpc" in c for c in calls):
        return None
    writes = []
    for call in calls:
        params = call.get("params") if isinstance(call.get("params"), Mapping) else {}
        if call.get("method") != "tools/call":
            continue
        arguments = params.get("arguments")
        write: dict[str, Any] = {"tool": str(params.get("name", "?"))}
        write.update(_labelled(arguments) if isinstance(arguments, Mapping) else {"unreadable": "no arguments object"})
        writes.append(write)
    return writes


def _graphql(body: bytes) -> list[dict[str, Any]]:
    try:
        request = _READER.read(body)
    except GraphQLRefused as exc:
        return [{"unreadable": f"GraphQL: {exc}"}]
    operation = request.operation
    if operation.kind != "mutation":
        return []
    writes = []
    for top in operation.fields:
        write: dict[str, Any] = {"field": top.name + (f" (as {top.alias})" if top.alias else "")}
        arguments = {name: top.argument(name, request.variables) for name in top.arguments}
        nested = arguments.get("input")
        write.update(_labelled(arguments))
        if isinstance(nested, Mapping):
            for label, value in _labelled(nested).items():
                write.setdefault(label, value)
        writes.append(write)
    return writes


def describe(operations: tuple[str, ...], method: str, url: str, body: bytes,
             headers: tuple[tuple[str, str], ...] = (), adapter: str = "") -> dict[str, Any]:
    """The writes a staged request performs, each with the fields a human needs to judge it.
    A write through a contents, commits or branches API also shows what it changes (the ref,
    the paths, each file as it leaves it), read by ``adapter``, the reader that judged it."""
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "").lower()
    encoded = next((v for k, v in headers if k.lower() == "content-encoding"), "").strip().lower()
    if urlsplit(url).path.endswith("/git-receive-pack"):
        writes: list[dict[str, Any]] = [_push(body, encoded)]
    elif encoded not in ("", "identity"):
        writes = [{"unreadable": f"the body is {encoded}-encoded: read it below"}]
    elif len(body) > READ_LIMIT:
        writes = [{"unreadable": "the body is too large to summarise"}]
    elif _is_graphql(url, body):
        writes = _graphql_write(adapter, operations, method, url, body, headers)
    else:
        writes = _rest_write(adapter, operations, method, url, body, headers, content_type)
    if len(operations) == 1 or len(operations) == len(writes):
        for n, write in enumerate(writes):
            write.setdefault("operation", operations[0 if len(operations) == 1 else n])
    if "pr.merge" in operations:
        for write in writes:
            if str(write.get("field", "merge")).startswith("merge") and "merge method" not in write:
                write["merge method"] = "squash" if write.get("squash") is True else "the repository's default"
    first = writes[0] if writes else {}
    return {**first, "writes": writes}


def _push(body: bytes, encoded: str) -> dict[str, Any]:
    """A held git push: its ref updates, changed paths, and each protected file (the built-in
    ``[paths]`` patterns) as the push leaves it, read from the pack by gitvow-gitsmart (a
    dependency of the proxy: git's smart-HTTP is every forge's)."""
    from gitvow.change_rules import DEFAULT_RULES
    from gitvow_gitsmart.classify import describe_push

    try:
        if encoded == "gzip":
            import zlib

            from gitvow_gitsmart.pack import PACK_LIMIT

            body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, PACK_LIMIT + 1)
        return dict(describe_push(body, lambda path: DEFAULT_RULES.path_verdict(path) is not None))
    except Exception as exc:  # shown to the human as it is; the push stays held
        return {"unreadable": f"the push could not be read ({type(exc).__name__}: {exc})"}


def _graphql_write(adapter: str, operations: tuple[str, ...], method: str, url: str, body: bytes,
                   headers: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """A GraphQL write's fields, and what it changes (``createCommitOnBranch``: the branch, the
    paths, each file as it leaves it) when its adapter reads a change from it."""
    writes = _graphql(body)
    changed = _api_change(adapter, operations, method, url, body, headers)
    if changed and len(writes) == 1:
        writes[0].update(changed)
    return writes


def _rest_write(adapter: str, operations: tuple[str, ...], method: str, url: str, body: bytes,
                headers: tuple[tuple[str, str], ...], content_type: str) -> list[dict[str, Any]]:
    """A REST write's fields, and what it changes when its adapter reads a change from it."""
    writes = _rest(method, url, content_type, body)
    changed = _api_change(adapter, operations, method, url, body, headers)
    if changed and len(writes) == 1:
        writes[0].update(changed)
    return writes


#: Operations whose writes may carry a change (:mod:`gitvow.api_change`).
_CHANGING = frozenset({"contents.write", "ref.write", "ref.force", "ref.delete"})


@cache
def _adapters() -> dict[str, Any]:
    from gitvow.plugins import installed

    return dict(installed().adapters)


def _api_change(adapter: str, operations: tuple[str, ...], method: str, url: str, body: bytes,
                headers: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The change an API write makes, as its adapter reads it: the ref it moves, the paths it
    touches, and each file as the write leaves it. Empty when there is none to show."""
    if not adapter or _CHANGING.isdisjoint(operations):
        return {}
    try:
        reader = _adapters().get(adapter)
        if reader is None:
            return {}
        request = Request.from_url(method, url, headers={k.lower(): v for k, v in headers}, body=body)
        change = reader.classify(request).change
    except Exception as exc:  # shown to the human as it is; the write stays held
        return {"unreadable": f"what the write changes could not be read here ({type(exc).__name__})"}
    if change is None:
        return {}
    shown = {
        "refs": "; ".join(f"{r.ref} {r.kind}" for r in change.refs) or "(none)",
        "paths": ", ".join(change.paths) or "(none)",
        "added": f"{change.added_bytes} bytes (largest {change.largest})",
    }
    if change.unestablished:
        shown["unestablished"] = change.unestablished
    for path, text in change.diffs:
        shown[f"file {path}"] = "\n" + text
    return shown


def _is_graphql(url: str, body: bytes) -> bool:
    path = urlsplit(url).path.rstrip("/")
    if not path.endswith("/graphql"):
        return False
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return True  # unreadable GraphQL is reported as such
    return not isinstance(data, Mapping) or "query" in data


__all__ = ["FIELDS", "describe"]
