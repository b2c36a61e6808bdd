"""What adapters read (a :class:`Request`) and what they answer (a :class:`Classification`).

Both are plain frozen dataclasses: the proxy builds a Request from a mitmproxy flow, ``gitvow
explain`` from its command line, the contract kit from fixtures; nothing downstream of an
adapter sees a method and path again, only operations and a repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gitvow.change import Change
from gitvow.paths import split_path
from gitvow.vocabulary import UNKNOWN

_EMPTY: Mapping[str, str] = MappingProxyType({})
ZERO_OID = "0" * 40
#: A :class:`Fixture`'s ``repo`` that asserts the request names no repository (None: not checked).
NO_REPO = ""


@dataclass(frozen=True, slots=True)
class Request:
    """An HTTP request as an adapter sees it. Header names are lower-case."""

    method: str
    host: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = _EMPTY
    body: bytes = b""
    port: int = 443
    scheme: str = "https"

    @classmethod
    def from_url(
        cls, method: str, url: str, *, headers: Mapping[str, str] | None = None, body: bytes = b""
    ) -> Request:
        """Build a request from a full URL, as ``gitvow explain`` and fixtures write them."""
        from urllib.parse import urlsplit  # not on the agent hook's path, which builds no request

        parts = urlsplit(url)
        if not parts.hostname:
            raise ValueError(f"not an absolute URL: {url!r}")
        scheme = parts.scheme or "https"
        port = parts.port or (443 if scheme == "https" else 80)
        return cls(
            method=method.upper(),
            host=parts.hostname.lower(),
            path=parts.path or "/",
            query=parts.query,
            headers={k.lower(): v for k, v in (headers or {}).items()},
            body=body,
            port=port,
            scheme=scheme,
        )

    @property
    def url(self) -> str:
        default = 443 if self.scheme == "https" else 80
        netloc = self.host if self.port == default else f"{self.host}:{self.port}"
        return f"{self.scheme}://{netloc}{self.path}" + (f"?{self.query}" if self.query else "")

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)

    @property
    def segments(self) -> list[str]:
        """The path split on ``/`` and each segment percent-decoded after splitting
        (:func:`gitvow.paths.split_path`). In ``classify`` the path is canonical already (the
        pipeline decoded unreserved characters and refused what a front end would rewrite),
        so this never raises there; elsewhere it raises :class:`~gitvow.paths.PathRefused`."""
        return split_path(self.path)


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """One ref-update command from the start of a git receive-pack body."""

    old: str
    new: str
    ref: str

    @property
    def kind(self) -> str:
        """``create``, ``delete`` or ``update`` (an update may be a force-move: compare old and new)."""
        if self.old == ZERO_OID:
            return "create"
        if self.new == ZERO_OID:
            return "delete"
        return "update"


@dataclass(frozen=True, slots=True)
class Target:
    """An object a request names by an identifier that does not say its repository.

    ``kind`` and ``value`` are the adapter's own (GitHub ``node`` + a node id, GitLab
    ``project`` + a numeric id); only the adapter's :meth:`~gitvow.adapter.Adapter.resolve`
    reads them, by asking the forge. ``by_type`` settles routes whose operation depends on
    the object: when the forge says the object is of a type listed there, the
    classification's operations become that entry's (GitHub ``PATCH …/issues/7`` on a pull
    request is ``pr.edit``). A target with ``by_type`` is resolved whenever an agent sends it;
    one without only when a repository gate needs its repository.
    """

    kind: str
    value: str
    by_type: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Where on the same host the forge answers about it (e.g. the GraphQL endpoint's path).
    at: str = ""


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the forge said a :class:`Target` is: its repository (None: it belongs to none,
    e.g. a user) and its type (GitHub's ``__typename``, ``"project"`` on GitLab)."""

    repo: str | None
    type: str = ""


@dataclass(frozen=True, slots=True)
class IssueDraft:
    """One issue a request creates, read from the fields the forge reads (GitHub's REST
    ``title``/``body``, GraphQL ``createIssue(input:)``, GitLab's ``description``, Linear's
    ``issueCreate(input:)``), never from whatever object in the body happens to have a title.
    ``None`` is a field absent or not text."""

    title: str | None
    body: str | None = None


@dataclass(frozen=True, slots=True)
class Classification:
    """An adapter's answer: the operations a request performs and the repositories it targets.

    ``repos`` are every repository the request names literally, in any argument; ``repo`` is
    kept for callers that know one (it is put first in ``repos``, and set from ``repos`` when
    there is exactly one). ``targets`` are objects named by opaque identifiers whose
    repository only the forge knows: while any remains, the request's repositories are not
    established, and every repository gate that is constrained refuses a write with
    ``repo_unresolved`` (the proxy resolves them first when it needs to, see
    :meth:`~gitvow.adapter.Adapter.resolve`).

    ``unknown_code`` is the reason code reported when ``unknown`` is among the operations
    (``mode_denied`` for REST, ``graphql_mutation``/``graphql_denied``/``linear_policy`` on
    GraphQL hosts); ``mode_code`` the code for an operation refused by mode. ``note`` says in a
    few words why a request was not understood; it is shown to the agent, so it never quotes
    the body.
    """

    operations: tuple[str, ...]
    repo: str | None = None
    adapter: str = ""
    unknown_code: str = "mode_denied"
    mode_code: str = "mode_denied"
    note: str = ""
    refs: tuple[RefUpdate, ...] = ()
    details: Mapping[str, object] = field(default=_EMPTY)
    repos: tuple[str, ...] = ()
    targets: tuple[Target, ...] = ()

    #: Every operation the request performs, once per action: a GraphQL document with two
    #: ``createIssue`` fields (aliases) lists ``issue.create`` twice. Empty when each of
    #: ``operations`` is performed once. Budgets and counters count these (:attr:`performed`).
    actions: tuple[str, ...] = ()
    #: The issues the request creates, one per ``issue.create`` action the adapter could read;
    #: fewer than there are such actions means some could not be read (``[issue_shape]`` refuses).
    issues: tuple[IssueDraft, ...] = ()
    #: What the write changes (ref updates, paths, sizes, secrets), for the ``change`` stage;
    #: None when the adapter reads no content from this request.
    change: Change | None = None

    def __post_init__(self) -> None:
        repo, repos = self.repo, self.repos
        if repo is not None and repo not in repos:
            object.__setattr__(self, "repos", (repo, *repos))
        elif repo is None and len(repos) == 1:
            object.__setattr__(self, "repo", repos[0])

    @classmethod
    def unknown(cls, note: str, *, code: str = "mode_denied", repo: str | None = None) -> Classification:
        """A request the adapter could not read or match: denied at every mode."""
        return cls(operations=(UNKNOWN,), repo=repo, unknown_code=code, note=note)

    @property
    def repo_established(self) -> bool:
        """Whether every repository the request touches is known: at least one, and no target left."""
        return bool(self.repos) and not self.targets

    @property
    def is_unknown(self) -> bool:
        return UNKNOWN in self.operations

    @property
    def performed(self) -> tuple[str, ...]:
        """Every operation performed, repeated once per action (``actions``, else ``operations``)."""
        return self.actions or self.operations


@dataclass(frozen=True, slots=True)
class Fixture:
    """A wire example an adapter ships for the contract kit.

    ``operations`` is what the request must classify to. A ``near_miss`` fixture looks like a
    known operation but is not (GitLab ``POST /projects/:id/labels`` is not ``label.add``).
    ``repo`` is the repository it must name; None leaves it unchecked and :data:`NO_REPO`
    (``""``) asserts it names none.
    """

    method: str
    url: str
    operations: tuple[str, ...]
    body: bytes = b""
    headers: Mapping[str, str] = _EMPTY
    repo: str | None = None
    near_miss: bool = False
    note: str = ""

    def request(self) -> Request:
        return Request.from_url(self.method, self.url, headers=self.headers, body=self.body)

    @property
    def id(self) -> str:
        kind = "near-miss " if self.near_miss else ""
        return f"{kind}{self.method} {self.url} -> {','.join(self.operations)}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Operations an adapter recognised in an agent's tool call (a shell command or an MCP tool).

    ``repos`` are every repository the call names when it names several (a GraphQL document
    with mutations on two projects), as :attr:`Classification.repos`; ``repo`` alone otherwise."""

    operations: tuple[str, ...]
    repo: str | None = None
    adapter: str = ""
    summary: str = ""
    repos: tuple[str, ...] = ()
    #: As :class:`Classification`'s: the reason codes of an ``unknown`` operation and of a mode
    #: refusal (a GraphQL document's are ``graphql_*``, Linear's ``linear_policy``), and why.
    unknown_code: str = "mode_denied"
    mode_code: str = "mode_denied"
    note: str = ""
    #: Objects the call names by opaque id only (a GraphQL node id): while any remains, its
    #: repositories are not established, as for :attr:`Classification.targets`.
    targets: tuple[Target, ...] = ()
    #: What the call's write changes as far as the command line shows it (``git push``'s ref
    #: updates), judged by the ``change`` stage as :attr:`Classification.change` is.
    change: Change | None = None
