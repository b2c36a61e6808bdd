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
_KEEP = frozenset({"content-type", "content-encoding", "accept", "user-agent", "graphql-features",
                   "mcp-protocol-version", "mcp-method", "mcp-name"})
#: (an MCP call's session is not kept: the approved call is sent in a session of the proxy's own)
_KEEP_PREFIXES = ("x-github-", "x-gitlab-", "x-mcp-", "mcp-param-")

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
        """What the request will do, for a human, read where the forge reads it
        (:mod:`gitvow_proxy.approval_reader`): each write's title, body, head and base, a
        merge's method and expected head."""
        from gitvow_proxy.approval_reader import describe

        return describe(self.operations, self.method, self.url, self.body, self.headers, self.adapter)

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
    "fingerprint",
    "kept_headers",
    "new_id",
]
