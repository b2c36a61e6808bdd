from __future__ import annotations

import json

import pytest

from gitvow.graphql import GraphQLReader, GraphQLRefused


def body(query: str, **extra: object) -> bytes:
    return json.dumps({"query": query, **extra}).encode()


def names(reader: GraphQLReader, payload: bytes) -> list[str]:
    return [f.name for f in reader.read(payload).operation.fields]


def test_aliases_resolve_to_schema_names_and_fragments_are_followed() -> None:
    reader = GraphQLReader()
    query = """
      fragment Merge on Mutation { innocent: mergePullRequest(input: {pullRequestId: $id}) { clientMutationId } }
      mutation M($id: ID!) { ...Merge ... on Mutation { addComment(input: {subjectId: $id, body: "x"}) { clientMutationId } } }
    """
    read = reader.read(body(query, variables={"id": "PR_1"}))
    assert read.operation.kind == "mutation"
    assert [(f.name, f.alias) for f in read.operation.fields] == [("mergePullRequest", "innocent"), ("addComment", None)]
    assert read.operation.fields[0].argument("input", read.variables) == {"pullRequestId": "PR_1"}


def test_operation_name_selects_one_of_several() -> None:
    reader = GraphQLReader()
    query = "query A { viewer { login } } mutation B { deleteRepository(input: {}) { clientMutationId } }"
    assert names(reader, body(query, operationName="A")) == ["viewer"]
    assert names(reader, body(query, operationName="B")) == ["deleteRepository"]


@pytest.mark.parametrize(
    ("payload", "note"),
    [
        (body("query A { a } query B { b }"), "several operations and no operationName"),
        (body("query A { a }", operationName="Z"), "operationName does not name"),
        (body("subscription { issueUpdated { id } }"), "subscriptions are not allowed"),
        (body("mutation { "), "does not parse"),
        (body("{ ...Missing }"), "fragment Missing is not defined"),
        (body("fragment F on Query { ...F } { ...F }"), "spreads itself"),
        (b"[{}]", "batches are not allowed"),
        (b"not json", "not JSON"),
        (json.dumps({"extensions": {"persistedQuery": {}}}).encode(), "persisted queries"),
        (body("{ a }", variables=[1]), "variables is not an object"),
    ],
)
def test_unreadable_requests_are_refused_with_a_note(payload: bytes, note: str) -> None:
    with pytest.raises(GraphQLRefused, match=note):
        GraphQLReader().read(payload)


def test_limits_on_body_tokens_and_fields() -> None:
    with pytest.raises(GraphQLRefused, match="over the 100-byte limit"):
        GraphQLReader(body_limit=100).read(body("{ " + "a " * 100 + "}"))
    with pytest.raises(GraphQLRefused, match="over the 50-token limit"):
        GraphQLReader(token_limit=50).read(body("{ " + "a " * 100 + "}"))
    with pytest.raises(GraphQLRefused, match="more than 3 top-level fields"):
        GraphQLReader(field_limit=3).read(body("{ a b c d }"))


def test_parsed_documents_are_cached_by_content_and_bounded() -> None:
    reader = GraphQLReader(cache_size=2)
    first = reader.operation("mutation { a }")
    assert reader.operation("mutation { a }") is first
    reader.operation("mutation { b }")
    reader.operation("mutation { c }")
    assert reader.operation("mutation { a }") is not first  # evicted, parsed again


def test_a_refusal_is_cached_too() -> None:
    reader = GraphQLReader()
    for _ in range(2):
        with pytest.raises(GraphQLRefused, match="does not parse"):
            reader.operation("mutation {")


def test_variable_defaults_apply_to_omitted_variables_only() -> None:
    from gitvow.graphql import GraphQLReader

    reader = GraphQLReader()
    query = 'mutation($a: String = "A", $b: Int = 2, $c: String, $d: In = {x: [1, "y"]}) { f(a: $a, b: $b, c: $c, d: $d) }'
    request = reader.read(json.dumps({"query": query, "variables": {"b": None, "c": "C"}}).encode())
    assert dict(request.variables) == {"a": "A", "b": None, "c": "C", "d": {"x": [1, "y"]}}
    (field,) = request.operation.fields
    assert field.argument("a", request.variables) == "A"
    assert field.argument("d", request.variables) == {"x": [1, "y"]}
    plain = reader.read(json.dumps({"query": "mutation($a: String) { f(a: $a) }"}).encode())
    assert dict(plain.variables) == {}
