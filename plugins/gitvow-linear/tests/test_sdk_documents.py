"""Every GraphQL document the official Linear SDK can send, classified and evaluated.

``data/linear_sdk_documents.json`` is derived from npm ``@linear/sdk`` by
``scripts/derive_sdk_documents.py``. Each document is sent as the SDK sends it — the operation
followed by every fragment definition it spreads — and must come out as:

* a query: ``read``, allowed at ``advisory``;
* a mutation on our list (``gitvow_linear.mutations``): its operations, allowed exactly from their mode up and refused
  below it with ``linear_policy``;
* any other mutation: ``unknown``, refused at every mode and with every capability.

The expectations below are written out here, independently of the adapter's table, so a
change to either shows up as a failure.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from graphql import FieldNode, OperationDefinitionNode, OperationType, parse

from gitvow.contract.suite import every_grant
from gitvow.evaluator import Grant, evaluate
from gitvow.modes import Mode
from gitvow.policy.table import DEFAULT_TABLE
from gitvow.request import Request
from gitvow_linear import LINEAR_POLICY, LinearAdapter
from gitvow_linear.fixtures import URL

DATA = Path(__file__).parent / "data" / "linear_sdk_documents.json"

#: The Linear mutations we map, spelled out (attachment* is listed in full below).
EXPECTED_MUTATIONS: dict[str, tuple[str, ...]] = {
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
    **{
        name: ("attachment.link",)
        for name in (
            "attachmentCreate", "attachmentDelete", "attachmentLinkDiscord", "attachmentLinkFront",
            "attachmentLinkGitHubIssue", "attachmentLinkGitHubPR", "attachmentLinkGitLabMR",
            "attachmentLinkIntercom", "attachmentLinkJiraIssue", "attachmentLinkSalesforce",
            "attachmentLinkSlack", "attachmentLinkURL", "attachmentLinkZendesk", "attachmentSyncToSlack",
            "attachmentUpdate",
        )
    },
}


@cache
def sdk() -> dict[str, object]:
    data: dict[str, object] = json.loads(DATA.read_text())
    return data


def documents() -> Iterator[tuple[str, str]]:
    data = sdk()
    fragments: dict[str, str] = data["fragments"]  # type: ignore[assignment]
    entries: dict[str, dict[str, object]] = data["documents"]  # type: ignore[assignment]
    for name, entry in sorted(entries.items()):
        operation = str(entry["operation"])
        names: list[str] = entry["fragments"]  # type: ignore[assignment]
        # The SDK's text exactly (see the derivation script's ``assemble``).
        yield name, (operation + "    " + "\n".join(fragments[n] for n in names)) if names else operation


def shape(text: str) -> tuple[str, tuple[str, ...]]:
    """(query|mutation, top-level field names) read independently of the adapter."""
    (operation,) = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    kind = "mutation" if operation.operation is OperationType.MUTATION else "query"
    return kind, tuple(s.name.value for s in operation.selection_set.selections if isinstance(s, FieldNode))


DOCUMENTS = list(documents())


def sdk_request(text: str) -> Request:
    # The SDK's client posts {"query", "variables"} as JSON with no operationName.
    body = json.dumps({"query": text, "variables": {}}).encode()
    return Request.from_url("POST", URL, headers={"content-type": "application/json"}, body=body)


def expected_operations(text: str) -> tuple[str, ...]:
    kind, fields = shape(text)
    if kind == "query":
        return ("read",)
    ops: list[str] = []
    for field in fields:
        for op in EXPECTED_MUTATIONS.get(field, ("unknown",)):
            if op not in ops:
                ops.append(op)
    return tuple(ops)


def test_the_inventory_is_the_whole_sdk() -> None:
    """Pinned so a regenerated list that lost documents cannot pass quietly."""
    kinds = Counter(shape(text)[0] for _, text in DOCUMENTS)
    assert sdk()["source"] == "@linear/sdk@98.0.0"
    assert len(DOCUMENTS) == 674
    assert kinds == {"query": 347, "mutation": 327}
    assert all("fragment " in text for _, text in DOCUMENTS if "..." in text)


def test_every_mapped_mutation_is_in_the_sdk() -> None:
    """The table names real Linear mutations (a typo would leave one unreachable)."""
    sdk_mutations = {field for _, text in DOCUMENTS if shape(text)[0] == "mutation" for field in shape(text)[1]}
    assert set(EXPECTED_MUTATIONS) <= sdk_mutations
    assert {f for f in sdk_mutations if f.startswith("attachment")} <= set(EXPECTED_MUTATIONS)


@pytest.mark.parametrize(("name", "text"), DOCUMENTS, ids=[name for name, _ in DOCUMENTS])
def test_sdk_document(name: str, text: str) -> None:
    adapter = LinearAdapter()
    result = adapter.classify(sdk_request(text))
    expected = expected_operations(text)
    assert result.operations == expected, result.note
    assert result.unknown_code == LINEAR_POLICY
    assert result.mode_code == LINEAR_POLICY
    if expected == ("read",):
        assert evaluate(result, Grant(Mode.ADVISORY)).allowed
        return
    if "unknown" in expected:
        for grant in every_grant():
            verdict = evaluate(result, grant)
            assert not verdict.allowed and verdict.code == LINEAR_POLICY, grant
        return
    needed = max(DEFAULT_TABLE[op].min_mode for op in expected)
    for mode in Mode:
        verdict = evaluate(result, Grant(mode))
        assert verdict.allowed is (mode >= needed), mode
        if not verdict.allowed:
            assert verdict.code == LINEAR_POLICY


def test_sdk_figures() -> None:
    """How the SDK's mutations split: mapped (and to what) versus refused."""
    mapped = Counter(expected_operations(text) for _, text in DOCUMENTS if shape(text)[0] == "mutation")
    refused = mapped.pop(("unknown",))
    assert refused == 327 - sum(mapped.values())
    assert sum(mapped.values()) == 25
    assert mapped[("attachment.link",)] == 15
