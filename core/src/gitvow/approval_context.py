"""What the forge says about a staged request, for the human who approves it: forge-neutral values.

A merge staged as ``PUT …/pulls/7/merge`` or ``mergePullRequest(pullRequestId: "PR_kw…")``
tells a human nothing by itself. When the proxy stages a ``pr.create`` or ``pr.merge`` it asks
the adapter that judged the request (:meth:`gitvow.adapter.Adapter.approval_subject`, then
:meth:`~gitvow.adapter.Adapter.approval_context`) what the forge says about it, with the
credential it injects, and keeps the answer with the approval; right before an approved merge
is sent it asks the adapter to pin it to the head the human saw
(:meth:`~gitvow.adapter.Adapter.pin_head`). The forge knowledge is the adapter's; this module
holds what every adapter and the enforcement points share:

- the values: :class:`Subject` (what the request names), :class:`PullRequest`,
  :class:`FileChange`, :class:`Changes` and :class:`ApprovalContext` with its JSON form;
- :class:`Ask`, how an adapter asks the forge (the proxy gives one bound to the request's host,
  carrying the injected credential, within its time and size limits), and small readers over
  it (:func:`answer_json`, :func:`optional_json`, :func:`patch_counts`);
- :class:`ApprovalFixture` (a staged request with the forge's recorded answers) and
  :func:`recorded`, an :class:`Ask` that replays them, for the contract kit and adapter tests.

The model is by kind (``merge``, ``create``): each kind fills the parts it has and leaves the
others None. A context is shown, never trusted to decide: a failure is a context whose
``error`` says what.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from gitvow.request import Fixture

MERGE, CREATE = "merge", "create"
#: The diff kept is cut here (``truncated`` says so); the files list stays whole up to FILE_LIMIT.
DIFF_LIMIT = 256 * 1024
FILE_LIMIT = 300
#: What :meth:`Adapter.approval_unsupported` may declare: the context reader, the pin.
PARTS = ("context", "pin")


class ContextError(Exception):
    """The forge did not say what the approval needs; the message is shown to the human."""


class Ask(Protocol):
    """One request to the forge host of the staged request, with the injected credential:
    ``(status, body)``. Raises OSError on a transport failure, a timeout or an answer over the
    enforcement point's size limit."""

    def __call__(self, method: str, path: str, body: bytes = b"", accept: str = "application/json") -> tuple[int, bytes]:
        ...


@dataclass(frozen=True, slots=True)
class Subject:
    """What a staged ``pr.merge`` or ``pr.create`` names: a pull request (repository and
    number, or a forge's opaque id in ``node``), or a repository's head and base for a creation.
    ``project`` is a forge's own project reference where it has one (GitLab's id or encoded
    path, as the request gave it)."""

    kind: str
    repo: str | None = None
    number: int | None = None
    node: str | None = None
    head: str = ""
    base: str = ""
    project: str | None = None


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    additions: int | None = None
    deletions: int | None = None
    status: str = ""


@dataclass(frozen=True, slots=True)
class PullRequest:
    """A pull (merge) request as the forge describes it, in words a human reads."""

    number: int | None = None
    title: str = ""
    author: str = ""
    head: str = ""
    base: str = ""
    head_sha: str = ""
    state: str = ""
    mergeable: str = ""
    checks: str = ""
    reviews: str = ""
    url: str = ""
    #: Whether the forge says it is merged (None: it did not say).
    merged: bool | None = None


@dataclass(frozen=True, slots=True)
class Changes:
    """What the head changes against the base."""

    files: tuple[FileChange, ...] = ()
    diff: str = ""
    truncated: bool = False
    commits: int | None = None

    @property
    def additions(self) -> int:
        return sum(f.additions or 0 for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deletions or 0 for f in self.files)


@dataclass(frozen=True, slots=True)
class ApprovalContext:
    """The forge's answer for one approval (``error`` set: the fetch failed, and why)."""

    kind: str
    repo: str | None = None
    fetched_at: float = 0.0
    error: str | None = None
    pull: PullRequest | None = None
    changes: Changes | None = None
    #: The head the human is shown and the send is pinned to.
    head_sha: str = ""
    head: str = ""
    base: str = ""
    number: int | None = None
    notes: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.changes is not None:
            data["changes"]["additions"] = self.changes.additions
            data["changes"]["deletions"] = self.changes.deletions
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApprovalContext:
        pull = data.get("pull")
        changes = data.get("changes")
        return cls(
            kind=str(data.get("kind", "")), repo=data.get("repo"), fetched_at=float(data.get("fetched_at") or 0.0),
            error=data.get("error"), head_sha=str(data.get("head_sha") or ""), head=str(data.get("head") or ""),
            base=str(data.get("base") or ""), number=data.get("number"), notes=tuple(data.get("notes") or ()),
            pull=PullRequest(**pull) if isinstance(pull, Mapping) else None,
            changes=Changes(files=tuple(FileChange(**f) for f in changes.get("files", ())), diff=changes.get("diff", ""),
                            truncated=bool(changes.get("truncated")), commits=changes.get("commits"))
            if isinstance(changes, Mapping) else None,
        )

    def bounded(self) -> ApprovalContext:
        """This context with the diff cut at :data:`DIFF_LIMIT` bytes and the files at
        :data:`FILE_LIMIT`, as it is kept: an adapter returns what the forge said."""
        if self.changes is None:
            return self
        data = self.changes.diff.encode()
        diff, truncated = self.changes.diff, self.changes.truncated
        if len(data) > DIFF_LIMIT:
            diff, truncated = data[:DIFF_LIMIT].decode("utf-8", "ignore"), True
        return replace(self, changes=replace(self.changes, diff=diff, truncated=truncated,
                                             files=self.changes.files[:FILE_LIMIT]))


def kind_of(operations: Sequence[str]) -> str | None:
    """``merge`` for a staged ``pr.merge``, ``create`` for a ``pr.create``, None for anything else."""
    return MERGE if "pr.merge" in operations else CREATE if "pr.create" in operations else None


def answer_json(ask: Ask, path: str, *, method: str = "GET", body: bytes = b"") -> Any:
    """The forge's JSON answer; :class:`ContextError` naming the request when it is not a 200 with JSON."""
    status, answer = ask(method, path, body)
    if status != 200:
        raise ContextError(f"{method} {path.partition('?')[0]} answered {status}")
    try:
        return json.loads(answer)
    except ValueError:
        raise ContextError(f"{method} {path.partition('?')[0]} did not answer JSON") from None


def optional_json(ask: Ask, path: str, notes: list[str]) -> Any:
    """An answer the context can do without (checks, reviews): a failure becomes a note, and None."""
    try:
        return answer_json(ask, path)
    except (ContextError, OSError) as exc:
        notes.append(str(exc))
        return None


def patch_counts(patch: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff's hunks."""
    lines = patch.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return added, removed


@dataclass(frozen=True, slots=True)
class ApprovalFixture:
    """A staged request with the forge's answers to the questions its context asks, recorded.

    ``answers`` maps ``"METHOD /path?query"`` to what the forge answered: a JSON value (a
    200), a ``str`` (a 200 of text), or ``(status, value)``. A question not recorded answers
    404. ``head_sha``, ``repo`` and ``number`` are what the context must say. The contract kit
    reads the context from these answers, checks its types and values, and pins a merge to
    ``head_sha``."""

    staged: Fixture
    answers: Mapping[str, object]
    head_sha: str
    repo: str | None = None
    number: int | None = None

    @property
    def id(self) -> str:
        return f"approval context of {self.staged.id}"


def recorded(answers: Mapping[str, object], asked: list[str] | None = None) -> Ask:
    """An :class:`Ask` that answers from ``answers`` (as :class:`ApprovalFixture` holds them),
    404 for anything else; each question asked is appended to ``asked``."""

    def ask(method: str, path: str, body: bytes = b"", accept: str = "application/json") -> tuple[int, bytes]:
        key = f"{method} {path}"
        if asked is not None:
            asked.append(key)
        if key not in answers:
            return 404, b'{"message": "Not Found"}'
        value = answers[key]
        status = 200
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int):
            status, value = value
        if isinstance(value, bytes):
            return status, value
        return status, value.encode() if isinstance(value, str) else json.dumps(value).encode()

    return ask


__all__ = [
    "CREATE",
    "DIFF_LIMIT",
    "FILE_LIMIT",
    "MERGE",
    "PARTS",
    "ApprovalContext",
    "ApprovalFixture",
    "Ask",
    "Changes",
    "ContextError",
    "FileChange",
    "PullRequest",
    "Subject",
    "answer_json",
    "kind_of",
    "optional_json",
    "patch_counts",
    "recorded",
]
