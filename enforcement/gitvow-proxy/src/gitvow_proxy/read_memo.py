"""Decisions of reads, remembered: an agent's client repeats the same reads (a poll, a list,
a GraphQL query), and deciding one again costs more than mitmproxy's whole forwarding of it.

A read's decision is a function of the request as the pipeline sees it and of the policy in
force, nothing else:

- the request: method, scheme, host, port, the whole path with its query, every header field
  as sent (name, value, order) and the body; the key holds each of them byte for byte, so a
  respelled path, another header or one more byte is another key and is decided afresh;
- the caller: the agent's name (its grant, scope and shadow mode come from the policy);
- the policy in force: the :class:`~gitvow_proxy.runtime.Runtime` (policy, gates, canary
  scanner, credentials) the memo belongs to. A reload builds a new runtime, and so a new,
  empty memo;
- nothing mutable: a decision is remembered only when it forwarded a classification that
  performs no write, names no target (a target's resolution is cached forge state), carries no
  change, took nothing from a budget (a capped ``inference.call``) and was not relayed for
  approval; run-state flags, budgets and counters are read only
  for writes, so no read's decision depends on them.

Requests with a large body are not remembered (the key would hold the body). The decisions
are kept in the runtime's one cache (:mod:`gitvow.memo`, kind :data:`READS`), which a reload
replaces and ``GITVOW_MEMO=off`` switches off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mitmproxy import http

from gitvow.memo import Kind
from gitvow.pipeline import Action, Decision
from gitvow.request import Classification
from gitvow.vocabulary import writes
from gitvow_proxy.flow_metadata import Audited

#: Largest body a remembered read may have (GraphQL queries are a few hundred bytes).
MAX_BODY = 16 * 1024
#: The runtime cache's kind of remembered reads (``Engine.memo``).
READS = Kind("proxy.read", 4096, "the agent's name and the request as sent: method, scheme, host, port, path "
             "with its query, every header field (name, value, order) and the body (at most MAX_BODY bytes)")

Key = tuple[object, ...]


def read_key(flow: http.HTTPFlow, agent: str) -> Key | None:
    """Everything a read's decision depends on besides the policy, or None (not remembered)."""
    req = flow.request
    body = req.raw_content
    if body is None or len(body) > MAX_BODY:
        return None
    return (agent, req.method, req.scheme, req.host, req.port, req.path, req.headers.fields, body)


def rememberable(classification: Classification, decision: Decision) -> bool:
    """Whether this decision may answer the same request again (see the module's docstring)."""
    return (decision.action is Action.FORWARD and not decision.staged and not classification.targets
            and classification.change is None and decision.taken is None
            and not any(writes(op) for op in classification.operations))


@dataclass(frozen=True, slots=True)
class Remembered:
    """A read's decision and what applying it to the same request gives, worked out once:
    the header fields forwarded (the agent's as sent, its credentials dropped, the adapter's
    added: a function of the key's fields and the decision), the secrets the response is
    scrubbed of, and the audit line's fields (``audit(took)`` builds the line's entry)."""

    decision: Decision
    fields: tuple[tuple[bytes, bytes], ...]
    secrets: tuple[bytes, ...] | None
    adapter: str
    audit: Callable[[float], Audited]


__all__ = ["MAX_BODY", "READS", "Remembered", "read_key", "rememberable"]
