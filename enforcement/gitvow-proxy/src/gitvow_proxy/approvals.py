"""Approvals: requests the ``approval`` relay refused, kept for a human to approve or reject.

The proxy stages the exact refused request (method, URL, body and the headers the forge
needs; never a credential or the proxy identity) in its state store and answers the agent
with the approval's id. A human decides with ``gitvow approvals`` or on the approval desk.
The proxy, which alone holds the forge credential, notices the approval in the store, claims
it (an atomic ``approved → sending`` step, so exactly one sender ever has it) and sends it
upstream once through the gates that still apply; the upstream's answer is recorded, shown
by ``gitvow approvals wait`` and returned to the agent's identical retry.

Lifecycle (``status``)::

    pending ──approve──▶ approved ──claim──▶ sending ──▶ sent     (the upstream answered)
       │                                        └─────▶ failed   (a gate refused it, or no answer)
       ├──reject──▶ rejected
       └──ttl─────▶ expired
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field, replace
from typing import Any

PENDING = "pending"
APPROVED = "approved"
SENDING = "sending"
SENT = "sent"
FAILED = "failed"
REJECTED = "rejected"
EXPIRED = "expired"
STATUSES = (PENDING, APPROVED, SENDING, SENT, FAILED, REJECTED, EXPIRED)
#: Statuses after which nothing changes.
FINAL = frozenset({SENT, FAILED, REJECTED, EXPIRED})
#: Statuses a new identical request starts over from (a fresh approval is staged).
RESTAGE = frozenset({FAILED, EXPIRED})

#: Request headers worth keeping for the upstream: how the body is encoded and what the client
#: accepts, plus the forge's own API headers. Credentials, cookies, the proxy identity and
#: hop-by-hop headers are never kept.
_KEEP = frozenset({"content-type", "content-encoding", "accept", "user-agent", "graphql-features"})
_KEEP_PREFIXES = ("x-github-", "x-gitlab-")

#: Crockford's base32 without the letters that read like digits: ids are read aloud and typed.
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id() -> str:
    """Six characters of base32: short enough to type, 2^30 ids."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(6))


def kept_headers(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The request headers a staged request keeps (see ``_KEEP``)."""
    return [(k, v) for k, v in fields if k.lower() in _KEEP or k.lower().startswith(_KEEP_PREFIXES)]


def fingerprint(agent: str, method: str, url: str, body: bytes) -> str:
    """What makes two requests "the same request again": who, what, where and the exact body."""
    digest = hashlib.sha256()
    for part in (agent.encode(), method.upper().encode(), url.encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Approval:
    """One staged request and what became of it."""

    id: str
    fingerprint: str
    agent: str
    operations: tuple[str, ...]
    repo: str | None
    adapter: str
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    created: float
    expires: float
    status: str = PENDING
    decided_by: str | None = None
    decided_at: float | None = None
    reason: str | None = None
    sent_at: float | None = None
    response_status: int | None = None
    response_type: str | None = None
    response_body: bytes = b""
    #: When the store last changed this approval (for the sender's and ``wait``'s polling).
    updated: float = field(default=0.0)

    @property
    def target(self) -> str:
        """``METHOD /path`` without the query (the query may carry secrets)."""
        path = self.url.split("://", 1)[-1].partition("/")[2].split("?", 1)[0]
        return f"{self.method} /{path}"

    def with_(self, **changes: Any) -> Approval:
        return replace(self, **changes)

    def summary(self) -> dict[str, Any]:
        """What the request will do, for a human: a pull request's title, body, head and base;
        a merge's method. Read from a REST JSON body or a GraphQL mutation's input."""
        return describe(self.operations, self.method, self.target, self.body)

    def as_json(self, *, body: bool = False) -> dict[str, Any]:
        """The approval as the CLI's ``--json`` prints it (the request body only when asked)."""
        data: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "agent": self.agent,
            "operations": list(self.operations),
            "repo": self.repo,
            "adapter": self.adapter,
            "request": self.target,
            "host": self.url.split("://", 1)[-1].partition("/")[0],
            "created": self.created,
            "expires": self.expires,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "reason": self.reason,
            "sent_at": self.sent_at,
            "response_status": self.response_status,
            "summary": self.summary(),
        }
        if body:
            data["body"] = self.body.decode("utf-8", "replace")
            data["response_body"] = self.response_body.decode("utf-8", "replace")
        return data


# -- a readable rendering ---------------------------------------------------------------------

_FIELDS = {
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
    "draft": "draft",
}


def _walk(value: Any, found: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            label = _FIELDS.get(key)
            if label is not None and isinstance(item, str | bool | int) and label not in found:
                found[label] = item
            else:
                _walk(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found)


def _graphql_arguments(query: str) -> dict[str, Any]:
    from graphql import parse
    from graphql.error import GraphQLError
    from graphql.language import ArgumentNode, ObjectFieldNode, ValueNode, visit
    from graphql.language.visitor import Visitor

    found: dict[str, Any] = {}

    def literal(node: ValueNode) -> Any:
        return getattr(node, "value", None)

    class Collect(Visitor):
        def enter_object_field(self, node: ObjectFieldNode, *_: object) -> None:
            label = _FIELDS.get(node.name.value)
            if label is not None and label not in found and literal(node.value) is not None:
                found[label] = literal(node.value)

        def enter_argument(self, node: ArgumentNode, *_: object) -> None:
            self.enter_object_field(node, *_)  # type: ignore[arg-type]

    try:
        visit(parse(query, no_location=True), Collect())
    except GraphQLError:
        return {}
    return found


def describe(operations: tuple[str, ...], method: str, target: str, body: bytes) -> dict[str, Any]:
    """The fields a human needs to judge the request; empty when the body is not readable JSON."""
    found: dict[str, Any] = {}
    try:
        data = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("query"), str):
        _walk(data.get("variables") or {}, found)
        for key, value in _graphql_arguments(data["query"]).items():
            found.setdefault(key, value)
    elif data is not None:
        _walk(data, found)
    if "pr.merge" in operations and "merge method" not in found:
        found["merge method"] = "squash" if found.get("squash") is True else "the repository's default"
    return found


__all__ = [
    "APPROVED",
    "EXPIRED",
    "FAILED",
    "FINAL",
    "PENDING",
    "REJECTED",
    "RESTAGE",
    "SENDING",
    "SENT",
    "STATUSES",
    "Approval",
    "describe",
    "fingerprint",
    "kept_headers",
    "new_id",
]
