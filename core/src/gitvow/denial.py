"""The one-line denial: what was refused, why, what to do instead, and ``reason=<code>`` last.

Agents read this line and so do scripts (the code is also in the ``X-Gitvow-Reason``
header). It never contains a query string, a header or a body: nothing that could carry a
secret.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow.relay import RelayTemplate
from gitvow.verdict import Outcome, Verdict

REASON_HEADER = "X-Gitvow-Reason"
#: The id of the approval a staged request waits for (the approval relay).
APPROVAL_HEADER = "X-Gitvow-Approval"

_DEFAULT_INSTEAD = {
    "mode_denied": "ask a human to do it or to raise this agent's mode",
    "approval_expired": "send the same request again to stage a new approval",
    "approval_rejected": "do not send it again; ask the human who rejected it",
    "approval_head_moved": "wait for a human to approve the new approval, which shows the new head",
    "graphql_mutation": "ask a human to do it; this mutation is not allowed to agents",
    "graphql_denied": "send one readable GraphQL operation within the size limits",
    "linear_policy": "ask a human to do it in Linear",
}


def _clean(text: str) -> str:
    return " ".join(text.split())


def render(
    verdict: Verdict,
    *,
    target: str = "",
    repo: str | None = None,
    relays: Mapping[str, RelayTemplate] | None = None,
    hints: Sequence[str] = (),
    approval: str | None = None,
) -> str:
    """The denial line for a refused verdict. ``target`` is e.g. ``PUT /repos/o/r/pulls/1/merge``.

    For a staged relay (the built-in ``approval``) ``approval`` is the id the proxy staged the
    request under; without one (the agent gate, ``gitvow explain``) the line says how the
    request gets staged. Hints (forge tools not to use) are left out there: sending the
    request through the proxy is exactly the sanctioned path."""
    if verdict.outcome is Outcome.ALLOW:
        raise ValueError("an allowed verdict has no denial line")
    what = verdict.operation or "request"
    if repo:
        what += f" on {repo}"
    if target:
        what += f" ({target})"
    instead = verdict.instead
    if verdict.outcome is Outcome.RELAY and verdict.relay:
        template = (relays or {}).get(verdict.relay)
        if template is not None and template.staged:
            why, instead = _staged(verdict.operation or "this request", approval)
        elif template is not None:
            why = f"{template.what} is done by a human-sanctioned relay, not by agents directly"
            instead = template.instead(tuple(hints))
        else:
            why = f"{verdict.operation} goes through the relay {verdict.relay}"
            instead = f"use `{verdict.relay}`"
    else:
        why = verdict.why
        instead = instead or _DEFAULT_INSTEAD.get(verdict.code or "", "ask a human")
    line = f"gitvow refused {_clean(what)}: {_clean(why)}; {_clean(instead)}. reason={verdict.code}"
    return line


def _staged(operation: str, approval: str | None) -> tuple[str, str]:
    if approval is None:
        return (f"{operation} needs a human's approval",
                "send it through the gitvow proxy, which stages it for a human and answers with an approval id "
                "(`gitvow approvals wait ID`), or ask a human to do it")
    return (f"{operation} needs a human's approval; staged for a human as approval {approval}",
            f"it is sent once approved: `gitvow approvals wait {approval}` (or send the same request again "
            "for its result)")
