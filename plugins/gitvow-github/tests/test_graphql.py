"""GitHub GraphQL: limits, operation selection, aliases and fragments, converse, repository, cache."""

from __future__ import annotations

import json

import pytest

from gitvow.adapter import configured
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import CONVERSE, Mode
from gitvow.pipeline import Action, Engine
from gitvow.request import Request
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.fixtures import gql

URL = "https://api.github.com/graphql"
GHES_URL = "https://ghe.example.test/api/graphql"


def classify(adapter: GitHubAdapter, body: bytes, url: str = URL, method: str = "POST"):  # type: ignore[no-untyped-def]
    return adapter.classify(Request.from_url(method, url, body=body))


def test_query_is_read_mutation_fields_are_operations(adapter: GitHubAdapter) -> None:
    assert classify(adapter, gql("{ viewer { login } }")).operations == ("read",)
    got = classify(adapter, gql("mutation { addComment(input: {}) { clientMutationId } }"))
    assert (got.operations, got.unknown_code, got.mode_code) == (("issue.comment",), "graphql_mutation", "graphql_mutation")


def test_aliases_are_resolved_to_schema_names(adapter: GitHubAdapter) -> None:
    got = classify(adapter, gql("mutation { addComment: mergePullRequest(input: {}) { clientMutationId } }"))
    assert got.operations == ("pr.merge",)


def test_fragments_and_inline_fragments_are_followed(adapter: GitHubAdapter) -> None:
    body = gql(
        "mutation { ... on Mutation { createIssue(input: {}) { clientMutationId } } ...M }"
        " fragment M on Mutation { x: enablePullRequestAutoMerge(input: {}) { clientMutationId } }"
    )
    assert classify(adapter, body).operations == ("issue.create", "pr.merge")


def test_every_top_level_field_counts(adapter: GitHubAdapter) -> None:
    body = gql("mutation { a: addComment(input: {}) { clientMutationId } b: addComment(input: {}) { clientMutationId }"
               " c: deleteRef(input: {}) { clientMutationId } }")
    # deleteRef deletes a ref: ref.delete joins (refused at every mode unless the policy allows it)
    assert classify(adapter, body).operations == ("issue.comment", "ref.write", "ref.delete")


@pytest.mark.parametrize(
    ("name", "operations"),
    [("Read", ("read",)), ("Write", ("pr.merge",)), (None, ("unknown",)), ("Missing", ("unknown",))],
)
def test_operation_name_selects_the_operation(adapter: GitHubAdapter, name: str | None, operations: tuple[str, ...]) -> None:
    document = "query Read { viewer { login } } mutation Write { mergePullRequest(input: {}) { clientMutationId } }"
    got = classify(adapter, gql(document, operation_name=name))
    assert got.operations == operations
    if operations == ("unknown",):
        assert got.unknown_code == "graphql_denied" and "operationName" in got.note


@pytest.mark.parametrize(
    ("body", "note"),
    [
        (b"{", "not JSON"),
        (gql("mutation { createIssue(input: {"), "does not parse"),
        (gql("subscription { x }"), "subscriptions"),
        (b'[{"query": "{ viewer { login } }"}]', "batches"),
        (json.dumps({"id": "persisted-123"}).encode(), "persisted"),
        (gql("mutation { ...Loop } fragment Loop on Mutation { ...Loop }"), "spreads itself"),
        (gql("mutation { ...Nowhere }"), "not defined"),
    ],
)
def test_unreadable_documents_are_graphql_denied(adapter: GitHubAdapter, body: bytes, note: str) -> None:
    got = classify(adapter, body)
    assert (got.operations, got.unknown_code) == (("unknown",), "graphql_denied")
    assert note in got.note


def test_body_limit_is_configurable(adapter: GitHubAdapter) -> None:
    body = gql("mutation { addComment(input: {body: \"" + "x" * 2000 + "\"}) { clientMutationId } }")
    assert classify(adapter, body).operations == ("issue.comment",)
    adapter = configured(adapter, {"graphql_body_limit": 1024})
    got = classify(adapter, body)
    assert (got.operations, got.unknown_code) == (("unknown",), "graphql_denied")
    assert "1024-byte limit" in got.note


def test_token_limit_is_configurable(adapter: GitHubAdapter) -> None:
    body = gql("{ viewer { " + "login " * 200 + "} }")
    assert classify(adapter, body).operations == ("read",)
    adapter = configured(adapter, {"graphql_token_limit": 100})
    got = classify(adapter, body)
    assert got.unknown_code == "graphql_denied" and "100-token limit" in got.note


@pytest.mark.parametrize(
    "options",
    [{"graphql_body_limit": 0}, {"graphql_body_limit": "64k"}, {"graphql_token_limit": True}, {"body_limit": 5}],
)
def test_bad_options_are_refused_by_name(adapter: GitHubAdapter, options: dict[str, object]) -> None:
    with pytest.raises(PolicyError, match=r"adapters\.github\."):
        configured(adapter, options)


def test_unknown_mutation_is_denied_at_every_mode(adapter: GitHubAdapter, engine: Engine) -> None:
    request = Request.from_url("POST", URL, body=gql("mutation { launchMissiles(input: {}) { ok } }"))
    for mode in Mode:
        decision = engine.decide(request, Caller("t", Grant(mode, frozenset({CONVERSE}))))
        assert (decision.action, decision.reason) == (Action.DENY, "graphql_mutation")
        assert "launchMissiles is not in GitHub's schema inventory" in (decision.message or "")


def test_get_and_compressed_bodies_are_denied(adapter: GitHubAdapter) -> None:
    got = classify(adapter, b"", url=URL + "?query=%7Bviewer%7Blogin%7D%7D", method="GET")
    assert (got.operations, got.unknown_code) == (("unknown",), "graphql_denied")
    gz = adapter.classify(Request.from_url("POST", URL, headers={"Content-Encoding": "gzip"}, body=b"\x1f\x8b"))
    assert gz.unknown_code == "graphql_denied"
    assert classify(adapter, b"", method="OPTIONS").operations == ("read",)


def test_converse_allows_a_document_only_if_every_field_is_conversational(engine: Engine) -> None:
    talker = Caller("t", Grant(Mode.ADVISORY, frozenset({CONVERSE})))
    talk = gql("mutation { addComment(input: {}) { clientMutationId } addPullRequestReview(input: {}) { clientMutationId }"
               " addReaction(input: {}) { clientMutationId } }")
    assert engine.decide(Request.from_url("POST", URL, body=talk), talker).action is Action.FORWARD
    mixed = gql("mutation { addComment(input: {}) { clientMutationId } closeIssue(input: {}) { clientMutationId } }")
    decision = engine.decide(Request.from_url("POST", URL, body=mixed), talker)
    assert (decision.action, decision.reason) == (Action.DENY, "graphql_mutation")
    assert decision.verdict is not None and decision.verdict.operation == "issue.edit"
    merge_too = gql("mutation { addComment(input: {}) { clientMutationId } mergePullRequest(input: {}) { clientMutationId } }")
    decision = engine.decide(Request.from_url("POST", URL, body=merge_too), talker)
    assert decision.reason == "hard_deny"  # the strictest verdict is reported


def test_repository_is_reported_where_the_document_names_it(adapter: GitHubAdapter) -> None:
    literal = gql('query { repository(owner: "octo", name: "app") { issues(first: 1) { totalCount } } }')
    assert classify(adapter, literal).repo == "octo/app"
    by_variables = gql("query Q($o: String!, $n: String!) { repository(owner: $o, name: $n) { id } }", {"o": "octo", "n": "cli"})
    assert classify(adapter, by_variables).repo == "octo/cli"
    two = gql('query { a: repository(owner: "o", name: "x") { id } b: repository(owner: "o", name: "y") { id } }')
    assert classify(adapter, two).repo is None
    missing_variable = gql("query Q($o: String!) { repository(owner: $o, name: \"x\") { id } }")
    assert classify(adapter, missing_variable).repo is None
    by_node_id = gql('mutation { createPullRequest(input: {repositoryId: "R_kgDOA"}) { clientMutationId } }')
    assert classify(adapter, by_node_id).repo is None


def test_ghes_graphql_endpoint(adapter: GitHubAdapter) -> None:
    got = classify(adapter, gql("mutation { mergeBranch(input: {}) { clientMutationId } }"), url=GHES_URL)
    assert got.operations == ("pr.merge",)
    assert classify(adapter, gql("{ viewer { login } }"), url="https://ghe.example.test/api/v3/graphql").operations == ("read",)


def test_documents_are_cached_by_content(adapter: GitHubAdapter) -> None:
    query = "mutation { addComment(input: {}) { clientMutationId } }"
    first = adapter.reader.operation(query)
    classify(adapter, gql(query, {"a": 1}))
    assert adapter.reader.operation(query) is first
    adapter = configured(adapter, {"graphql_cache_size": 1})
    one = adapter.reader.operation(query)
    adapter.reader.operation("{ viewer { login } }")
    assert adapter.reader.operation(query) is not one  # evicted: the cache is bounded


def test_whole_bodies_are_cached_and_bounded(adapter: GitHubAdapter) -> None:
    body = gql("mutation { addComment(input: {}) { clientMutationId } }", {"n": 1})
    first = classify(adapter, body)
    assert classify(adapter, body) is first  # same content, same answer, no decode
    assert classify(adapter, gql("mutation { addComment(input: {}) { clientMutationId } }", {"n": 2})) is not first
    adapter.documents.size = 3
    for n in range(10):
        classify(adapter, gql("{ viewer { login } }", {"n": n}))
    assert len(adapter.documents) == 3
    big = gql("{ viewer { login } }" + " " * adapter.documents.max_body)
    classify(adapter, big)
    assert len(adapter.documents) == 3 and classify(adapter, big) is not classify(adapter, big)


def test_notes_quote_at_most_a_short_field_name(adapter: GitHubAdapter) -> None:
    long_name = "x" * 500
    got = classify(adapter, gql(f"mutation {{ {long_name}(input: {{}}) {{ ok }} }}"))
    assert got.operations == ("unknown",) and len(got.note) < 150


def test_variable_defaults_name_the_repository_as_the_server_reads_it(adapter: GitHubAdapter) -> None:
    query = 'query($o: String = "team", $n: String = "paused") { repository(owner: $o, name: $n) { id } }'
    assert classify(adapter, gql(query)).repo == "team/paused"
    assert classify(adapter, gql(query, {"n": "app"})).repo == "team/app"
