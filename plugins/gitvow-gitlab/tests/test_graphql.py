"""GitLab GraphQL: mapped mutations, everything else refused, limits, and the Rails parameter traps."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from gitvow.adapter import configured
from gitvow.request import Classification, Request
from gitvow_gitlab.adapter import GitLabAdapter
from gitvow_gitlab.graphql_ops import GRAPHQL_DENIED, GRAPHQL_MUTATION, mutation_operation

URL = "https://gitlab.com/api/graphql"


@pytest.fixture
def adapter() -> GitLabAdapter:
    return GitLabAdapter()


def post(adapter: GitLabAdapter, query: str, variables: dict[str, object] | None = None, *, url: str = URL,
         **extra: object) -> Classification:
    body = json.dumps({"query": query, "variables": variables or {}, **extra}).encode()
    return adapter.classify(Request.from_url("POST", url, body=body, headers={"content-type": "application/json"}))


@pytest.mark.parametrize(
    ("field", "operation"),
    [
        ("mergeRequestCreate", "pr.create"),
        ("mergeRequestAccept", "pr.merge"),
        ("mergeRequestUpdate", "pr.edit"),
        ("mergeRequestSetDraft", "pr.edit"),
        ("mergeRequestSetLabels", "pr.edit"),
        ("mergeRequestSetReviewers", "pr.edit"),
        ("createIssue", "issue.create"),
        ("updateIssue", "issue.edit"),
        ("createNote", "issue.comment"),
    ],
)
def test_mapped_mutations(adapter: GitLabAdapter, field: str, operation: str) -> None:
    got = post(adapter, f'mutation {{ {field}(input: {{projectPath: "g/p"}}) {{ errors }} }}')
    assert got.operations == (operation,)
    assert got.repo == "g/p"
    assert got.mode_code == GRAPHQL_MUTATION


@pytest.mark.parametrize(
    "field",
    ["destroyNote", "createDiffNote", "issueMove", "projectCreate", "mergeRequestSet", "pipelineRetry",
     "createSnippet", "labelCreate", "mergeRequestReviewerRereview", "issueSetLabels",
     "mergeRequestSetAutoMerge", "mergeRequestSetAccepted"],
)
def test_every_other_mutation_is_unknown_with_graphql_mutation(adapter: GitLabAdapter, field: str) -> None:
    got = post(adapter, f"mutation {{ {field}(input: {{}}) {{ errors }} }}")
    assert got.is_unknown and got.unknown_code == GRAPHQL_MUTATION
    assert field in got.note
    assert mutation_operation(field) is None


def test_one_unmapped_field_makes_the_whole_document_unknown(adapter: GitLabAdapter) -> None:
    got = post(adapter, "mutation { createNote(input: {}) { errors } destroyNote(input: {}) { errors } }")
    assert got.operations == ("unknown",) and got.unknown_code == GRAPHQL_MUTATION


def test_aliases_and_fragments_are_resolved(adapter: GitLabAdapter) -> None:
    query = """
        mutation Ship($p: ID!) {
          harmless: createNote(input: {noteableId: "gid://gitlab/Issue/1", body: "x"}) { errors }
          ...Sneaky
        }
        fragment Sneaky on Mutation { ok: mergeRequestAccept(input: {projectPath: $p, iid: "1"}) { errors } }
    """
    got = post(adapter, query, {"p": "g/p"})
    assert set(got.operations) == {"issue.comment", "pr.merge"}


def test_repository_comes_from_variables_and_disagreement_gives_none(adapter: GitLabAdapter) -> None:
    q = "mutation($in: MergeRequestCreateInput!) { mergeRequestCreate(input: $in) { errors } }"
    assert post(adapter, q, {"in": {"projectPath": "team/app", "title": "t"}}).repo == "team/app"
    two = ('mutation { a: createIssue(input: {projectPath: "x/one", title: "t"}) { errors } '
           'b: createIssue(input: {projectPath: "x/two", title: "t"}) { errors } }')
    assert post(adapter, two).repo is None


def test_queries_are_read(adapter: GitLabAdapter) -> None:
    assert post(adapter, "query { project(fullPath: \"g/p\") { mergeRequests { nodes { iid } } } }").operations == ("read",)
    assert post(adapter, "{ currentUser { id } }").operations == ("read",)
    got = adapter.classify(Request.from_url("GET", f"{URL}?query={quote('{ currentUser { id } }')}"))
    assert got.operations == ("read",)


@pytest.mark.parametrize(
    ("method", "url", "body", "code"),
    [
        ("POST", URL, b"{not json", GRAPHQL_DENIED),
        ("POST", URL, b'[{"query": "{ a }"}]', GRAPHQL_DENIED),
        ("POST", URL, b'{"query": "{ a }", "_json": [{"query": "mutation { b }"}]}', GRAPHQL_DENIED),
        ("POST", URL, b'{"extensions": {"persistedQuery": {"sha256Hash": "x"}}}', GRAPHQL_DENIED),
        ("POST", URL, b'{"query": "mutation {"}', GRAPHQL_DENIED),
        ("POST", URL, b'{"query": "subscription { a }"}', GRAPHQL_DENIED),
        ("POST", URL, b'{"query": "query A { a } query B { b }"}', GRAPHQL_DENIED),
        ("POST", f"{URL}?query=mutation%7BmergeRequestAccept%7D", b'{"query": "{ a }"}', GRAPHQL_DENIED),
        ("POST", f"{URL}?_json=1", b'{"query": "{ a }"}', GRAPHQL_DENIED),
        ("GET", f"{URL}?query=mutation%7BcreateIssue%7Berrors%7D%7D", b"", GRAPHQL_MUTATION),
        ("GET", f"{URL}?query=%7Ba%7D&query=%7Bb%7D", b"", GRAPHQL_DENIED),
        ("DELETE", URL, b"", GRAPHQL_DENIED),
    ],
)
def test_unreadable_or_smuggled_documents_are_refused(adapter: GitLabAdapter, method: str, url: str, body: bytes,
                                                      code: str) -> None:
    got = adapter.classify(Request.from_url(method, url, body=body, headers={"content-type": "application/json"}))
    assert got.is_unknown
    assert got.unknown_code == code


def test_limits_default_to_the_cores_and_are_configurable(adapter: GitLabAdapter) -> None:
    big = "mutation { createNote(input: {body: \"" + "x" * 70_000 + "\"}) { errors } }"
    assert post(adapter, big).unknown_code == GRAPHQL_DENIED  # over 64 KiB
    adapter = configured(adapter, {"graphql_body_limit": 200_000})
    assert post(adapter, big).operations == ("issue.comment",)
    adapter = configured(adapter, {"graphql_field_limit": 2})
    three = "mutation { a: createNote(input: {}) { errors } b: createNote(input: {}) { errors } c: createNote(input: {}) { errors } }"
    got = post(adapter, three)
    assert got.is_unknown and "top-level fields" in got.note
    adapter = configured(adapter, {"graphql_token_limit": 20})
    assert "token" in post(adapter, "query { a b c d e f g h i j k l m n o p q r s t u v }").note


def test_parsed_documents_are_cached_by_text(adapter: GitLabAdapter) -> None:
    query = "mutation { createIssue(input: {projectPath: \"g/p\", title: \"t\"}) { errors } }"
    post(adapter, query)
    cached = adapter.reader.operation(query)
    assert adapter.reader.operation(query) is cached


def test_repeated_bodies_return_the_remembered_answer_and_the_memory_is_bounded(adapter: GitLabAdapter) -> None:
    query = "mutation { mergeRequestAccept(input: {projectPath: \"g/p\", iid: \"1\"}) { errors } }"
    first = post(adapter, query)
    assert post(adapter, query) is first
    refused = post(adapter, "mutation {")
    assert post(adapter, "mutation {") is refused and refused.unknown_code == GRAPHQL_DENIED
    for i in range(adapter.results.size + 5):
        post(adapter, f"query Q{i} {{ currentUser {{ id }} }}")
    assert len(adapter.results._results) == adapter.results.size
    assert post(adapter, query) is not first and post(adapter, query).operations == ("pr.merge",)


def test_the_url_is_checked_before_the_remembered_answer(adapter: GitLabAdapter) -> None:
    body = '{ currentUser { id } }'
    assert post(adapter, body).operations == ("read",)
    smuggled = post(adapter, body, url=f"{URL}?query=mutation%7BmergeRequestAccept%7D")
    assert smuggled.is_unknown and smuggled.unknown_code == GRAPHQL_DENIED


def test_variable_defaults_name_the_project_as_the_server_reads_it(adapter: GitLabAdapter) -> None:
    query = 'mutation($p: ID! = "team/paused") { createIssue(input: {projectPath: $p, title: "t"}) { errors } }'
    assert post(adapter, query).repo == "team/paused"
    assert post(adapter, query, {"p": "team/app"}).repo == "team/app"
    whole = 'mutation($i: CreateIssueInput! = {projectPath: "team/paused", title: "t"}) { createIssue(input: $i) { errors } }'
    assert post(adapter, whole).repo == "team/paused"
