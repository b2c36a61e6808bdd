"""The contract kit's check of an adapter's approval context and pin (``test_approval_context``).

An adapter whose fixtures stage a ``pr.merge`` or ``pr.create`` either reads the forge's
context for the human and pins a merge to the head they saw, or says why not
(:meth:`gitvow.adapter.Adapter.approval_unsupported`). What it reads is checked against the
forge's recorded answers (:meth:`~gitvow.adapter.Adapter.approval_fixtures`): the right types
and values, a JSON form that reads back the same, a :class:`ContextError` with a line for the
human when the forge answers nothing, and a pin that carries the head, keeps a value already
set, and leaves the request classified as it was.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Sequence

from gitvow.adapter import Adapter
from gitvow.approval_context import (
    MERGE,
    PARTS,
    ApprovalContext,
    ApprovalFixture,
    Changes,
    ContextError,
    FileChange,
    PullRequest,
    Subject,
    kind_of,
    recorded,
)
from gitvow.request import Fixture, Request

#: The text fields of the values a context holds, each of which must be a str.
_TEXTS = {PullRequest: ("title", "author", "head", "base", "head_sha", "state", "mergeable", "checks", "reviews", "url"),
          ApprovalContext: ("kind", "head_sha", "head", "base")}


def approval_problems(adapter: Adapter, fixtures: Sequence[Fixture]) -> tuple[list[str], list[str]]:
    """Every problem with ``adapter``'s approval context and pin, and the adapter's tracebacks."""
    problems: list[str] = []
    tracebacks: list[str] = []
    declared = dict(adapter.approval_unsupported())
    problems.extend(_declared_problems(declared))
    staged = [f for f in fixtures if not f.near_miss and kind_of(f.operations)]
    merges = [f for f in staged if "pr.merge" in f.operations]
    recorded_fixtures = list(adapter.approval_fixtures())
    if staged and "context" not in declared and not recorded_fixtures:
        problems.append(f"fixtures stage pr.merge or pr.create ({staged[0].id}), but approval_fixtures() records no "
                        "forge answers to read a context from and approval_unsupported() gives no 'context' reason")
    pinned = 0
    for found in recorded_fixtures:
        try:
            more, did_pin = _one(adapter, found, "pin" not in declared)
        except Exception as exc:
            problems.append(f"{found.id}: the adapter raised {type(exc).__name__}: {exc}")
            tracebacks.append("".join(traceback.format_exception(exc)).rstrip())
            continue
        problems.extend(more)
        pinned += did_pin
    merge_fixtures = [f for f in recorded_fixtures if "pr.merge" in f.staged.operations]
    if merges and "pin" not in declared and not pinned:
        where = "none of its merge approval_fixtures()" if merge_fixtures else "no merge in approval_fixtures()"
        problems.append(f"fixtures stage pr.merge ({merges[0].id}), but pin_head() pinned {where} and "
                        "approval_unsupported() gives no 'pin' reason")
    return problems, tracebacks


def _declared_problems(declared: dict[str, str]) -> list[str]:
    """What is wrong with ``approval_unsupported()``'s answer: a part it does not know, or no reason."""
    problems: list[str] = []
    for part, why in declared.items():
        if part not in PARTS:
            problems.append(f"approval_unsupported() names {part!r}; the parts are {', '.join(PARTS)}")
        elif not isinstance(why, str) or not why.strip():
            problems.append(f"approval_unsupported()[{part!r}] gives no reason")
    return problems


def _one(adapter: Adapter, found: ApprovalFixture, pins: bool) -> tuple[list[str], bool]:
    """The problems of one recorded approval, and whether its merge was pinned."""
    request = found.staged.request()
    operations = found.staged.operations
    kind = kind_of(operations)
    if kind is None:
        return [f"{found.id}: the staged request is neither pr.merge nor pr.create"], False
    got = adapter.classify(request)
    if kind_of(got.operations) != kind:
        return [f"{found.id}: classify() says {','.join(got.operations)}, not the staged operations"], False
    subject = adapter.approval_subject(request, operations)
    if not isinstance(subject, Subject) or subject.kind != kind:
        return [f"{found.id}: approval_subject() answered {subject!r}, not a {kind} Subject"], False
    problems: list[str] = []
    asked: list[str] = []
    context = adapter.approval_context(request, subject, recorded(found.answers, asked))
    if not isinstance(context, ApprovalContext):
        return [f"{found.id}: approval_context() answered a {type(context).__name__}, not an ApprovalContext"], False
    problems.extend(f"{found.id}: {p}" for p in _shape(context))
    expected = {"kind": kind, "head_sha": found.head_sha, "error": None,
                **({"repo": found.repo} if found.repo is not None else {}),
                **({"number": found.number} if found.number is not None else {})}
    for name, value in expected.items():
        if getattr(context, name) != value:
            problems.append(f"{found.id}: the context's {name} is {getattr(context, name)!r}, the forge said {value!r}")
    unasked = sorted(set(found.answers) - set(asked))
    if unasked:
        problems.append(f"{found.id}: recorded answers never asked for: {', '.join(unasked[:3])}")
    try:
        adapter.approval_context(request, subject, recorded({}))
        problems.append(f"{found.id}: a forge answering 404 to everything gave a context, not a ContextError")
    except ContextError as exc:
        if not str(exc).strip():
            problems.append(f"{found.id}: the ContextError for a forge answering 404 has no line for the human")
    if not pins or subject.kind != MERGE:
        return problems, False
    pinned = adapter.pin_head(request, found.head_sha)
    if pinned is None:
        return problems, False
    problems.extend(f"{found.id}: {p}" for p in _pin_problems(adapter, request, pinned, found.head_sha))
    return problems, True


def _shape(context: ApprovalContext) -> list[str]:
    """What in ``context`` is not of the type the enforcement points read."""
    problems = [f"{kind.__name__}.{name} is not text" for kind, names in _TEXTS.items() for name in names
                for holder in ([context] if kind is ApprovalContext else [context.pull] if context.pull else [])
                if not isinstance(getattr(holder, name), str)]
    if context.pull is not None and not isinstance(context.pull, PullRequest):
        problems.append(f"pull is a {type(context.pull).__name__}, not a PullRequest")
    if isinstance(context.pull, PullRequest) and (
            not isinstance(context.pull.number, int | None) or not isinstance(context.pull.merged, bool | None)):
        problems.append("PullRequest.number must be an int (or None), merged a bool (or None)")
    if context.changes is not None:
        if not isinstance(context.changes, Changes) or not isinstance(context.changes.diff, str):
            return [*problems, "changes is not a Changes with a text diff"]
        problems.extend(_file_problems(context.changes))
    if not isinstance(context.notes, tuple) or not all(isinstance(n, str) for n in context.notes):
        problems.append("notes is not a tuple of text")
    if not problems:
        again = ApprovalContext.from_json(json.loads(json.dumps(context.as_json())))
        if again != context:
            problems.append("the context's JSON form does not read back the same")
    return problems


def _file_problems(changes: Changes) -> list[str]:
    return [f"a file change {change!r} is not a FileChange with a path and counts" for change in changes.files
            if not isinstance(change, FileChange) or not isinstance(change.path, str) or not all(
                isinstance(n, int | None) and not isinstance(n, bool) for n in (change.additions, change.deletions))]


def _pin_problems(adapter: Adapter, request: Request, pinned: bytes, head_sha: str) -> list[str]:
    if not isinstance(pinned, bytes) or head_sha.encode() not in pinned or pinned == request.body:
        return [f"pin_head() answered {pinned[:80]!r}, which does not carry the head {head_sha[:12]}"]
    problems = []
    again = Request.from_url(request.method, request.url, headers=dict(request.headers), body=pinned)
    if adapter.pin_head(again, "b" * len(head_sha)) != pinned:
        problems.append("pin_head() on a body that carries a head replaced it (the agent's own value must be kept)")
    before, after = adapter.classify(request), adapter.classify(again)
    if (before.operations, before.repos) != (after.operations, after.repos):
        problems.append(f"the pinned body classifies as {','.join(after.operations)} on {after.repos}, the staged one "
                        f"as {','.join(before.operations)} on {before.repos}")
    return problems
