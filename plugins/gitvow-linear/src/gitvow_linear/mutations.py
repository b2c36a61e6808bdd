"""Linear mutation fields → operations: seed 003's ``linearMutations``, and nothing else.

Linear is one ``POST /graphql`` endpoint, so the top-level fields of the selected operation
are the whole wire shape. A query only reads. A mutation field is looked up here; a field
that is not here is ``unknown`` and denied, which is the posture Linear had before the
evaluator (seed 003, question 2). The table is deliberately exact: Linear adds mutations with
every schema release, and a new one must be looked at before it is allowed.

Decisions beyond the seed's list, each kept conservative:

* ``issueAddLabel`` and ``issueRemoveLabel`` are ``label.add``: they put an existing label on
  an issue (or take it off), which is what ``label.add`` names on every forge, and it has the
  same default row as ``issue.relate``. Creating or editing the labels a workspace offers
  (``issueLabelCreate`` …) stays ``unknown``.
* ``issueCreate`` *and* ``issueUpdate`` add ``issue.relate`` when their input sets
  ``parentId``: re-parenting an issue is linking it, and a policy that refuses
  ``issue.relate`` must not be bypassed by creating first and re-parenting after.
* Every ``attachment*`` field is ``attachment.link`` (seed 003: "Linear: attachment*"),
  including ``attachmentDelete`` and ``attachmentUpdate``; they manage the same links.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitvow.graphql import TopField
from gitvow.issues import draft_from_mapping
from gitvow.request import IssueDraft

#: Exact mutation field names and the operations they perform.
MUTATIONS: Mapping[str, tuple[str, ...]] = {
    "issueCreate": ("issue.create",),
    "issueUpdate": ("issue.edit",),
    "commentCreate": ("issue.comment",),
    "issueAddLabel": ("label.add",),
    "issueRemoveLabel": ("label.add",),
    "issueRelationCreate": ("issue.relate",),
    "projectCreate": ("issue.relate",),
    "projectUpdate": ("issue.relate",),
    "agentActivityCreate": ("agent.session",),
    "agentSessionUpdate": ("agent.session",),
}

#: Mutation fields with this prefix are ``attachment.link``.
ATTACHMENT_PREFIX = "attachment"

#: Mutations whose ``input`` may set a parent, and so link two issues.
_PARENTING = frozenset({"issueCreate", "issueUpdate"})


def _sets_parent(field: TopField, variables: Mapping[str, Any]) -> bool:
    from graphql.pyutils import Undefined  # imported on first use: graphql-core is slow to import

    value = field.argument("input", variables)
    if not isinstance(value, Mapping):
        return False
    parent = value.get("parentId", Undefined)
    return parent is not Undefined and parent is not None


def mutation_operations(field: TopField, variables: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The operations one mutation field performs, or None if it is not a known mutation."""
    name = field.name
    operations = MUTATIONS.get(name)
    if operations is None:
        return ("attachment.link",) if name.startswith(ATTACHMENT_PREFIX) else None
    if name in _PARENTING and _sets_parent(field, variables):
        return (*operations, "issue.relate")
    return operations


def issue_draft(field: TopField, variables: Mapping[str, Any]) -> IssueDraft | None:
    """``issueCreate(input: {title, description})`` as Linear reads it; None if unreadable.

    An input that sets ``descriptionData`` (the rich-text document Linear may show instead of
    ``description``) is unreadable: the draft would not be what the issue shows.
    """
    try:
        value = field.argument("input", variables)
    except Exception:  # a malformed literal is not an issue anyone can read
        return None
    return draft_from_mapping(value, body="description", unread=("descriptionData",))
