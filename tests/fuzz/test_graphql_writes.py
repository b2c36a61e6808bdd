"""A GraphQL document with a write field never classifies as ``read`` only.

hypothesis-graphql generates mutations from the schemas in ``schemas/`` (derived from the
committed mutation inventories by ``scripts/derive_fuzz_schemas.py``): every mutation field
of GitHub, Linear and GitLab, with aliases, literals and variables. Whatever a document
selects, if it is a mutation its classification must carry a write (or ``unknown``).
"""

from __future__ import annotations

import json

import hypothesis_graphql
import pytest
from fuzz_strategies import graphql_body, schema
from hypothesis import given
from hypothesis import strategies as st

from gitvow.plugins import installed
from gitvow.request import Request
from gitvow.vocabulary import writes

ENDPOINTS = {
    "github": ("github", "https://api.github.com/graphql"),
    "linear": ("linear", "https://api.linear.app/graphql"),
    "gitlab": ("gitlab", "https://gitlab.com/api/graphql"),
}


def classify(adapter_name: str, url: str, body: bytes) -> tuple[str, ...]:
    adapter = installed().adapters.get(adapter_name)
    if adapter is None:
        pytest.skip(f"the {adapter_name} adapter is not installed")
    request = Request.from_url("POST", url, headers={"content-type": "application/json"}, body=body)
    return adapter.classify(request).operations


def mutation_fields(forge: str) -> list[str]:
    mutation = schema(forge).mutation_type
    assert mutation is not None
    return sorted(mutation.fields)


@pytest.mark.parametrize("forge", sorted(ENDPOINTS))
def test_every_mutation_field_is_a_write(forge: str) -> None:
    """Exhaustive and cheap: each field of the forge's inventory alone, as the smallest document."""
    adapter_name, url = ENDPOINTS[forge]
    for field in mutation_fields(forge):
        operations = classify(adapter_name, url, graphql_body(f"mutation {{ {field}(input: {{}}) {{ id }} }}"))
        assert any(writes(op) for op in operations), (field, operations)


@pytest.mark.parametrize("forge", sorted(ENDPOINTS))
def test_a_mutation_is_never_read_only(forge: str) -> None:
    adapter_name, url = ENDPOINTS[forge]
    documents = st.sampled_from(mutation_fields(forge)).flatmap(
        lambda field: hypothesis_graphql.mutations(schema(forge), fields=[field]))

    @given(st.one_of(documents, hypothesis_graphql.mutations(schema(forge))), st.booleans())
    def check(document: object, as_named: bool) -> None:
        text = str(document)
        if as_named:  # an operation name and an explicit operationName must not change the answer
            text = text.replace("mutation", "mutation Fuzzed", 1) if text.startswith("mutation") else text
        operations = classify(adapter_name, url, graphql_body(text))
        assert any(writes(op) for op in operations), (text, operations)

    check()


@pytest.mark.parametrize("forge", sorted(ENDPOINTS))
def test_a_mutation_beside_queries_is_still_a_write(forge: str) -> None:
    """Several operations in one document: the selected one decides, and a mutation is a write."""
    adapter_name, url = ENDPOINTS[forge]

    @given(hypothesis_graphql.mutations(schema(forge)), hypothesis_graphql.queries(schema(forge)))
    def check(mutation: object, query: object) -> None:
        text = f"query Q {str(query).removeprefix('query').strip()} mutation M {str(mutation).removeprefix('mutation').strip()}"
        body = json.dumps({"query": text, "operationName": "M"}).encode()
        operations = classify(adapter_name, url, body)
        assert any(writes(op) for op in operations), (text, operations)

    check()
