"""Wire shapes of the ``linear`` adapter: the endpoint, the limits, options and credentials."""

from __future__ import annotations

import json

import pytest

from gitvow.adapter import configured
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant, evaluate
from gitvow.modes import CONVERSE, Mode
from gitvow.request import Request
from gitvow_linear import LINEAR_POLICY, LinearAdapter
from gitvow_linear.fixtures import URL, gql


def post(body: bytes, url: str = URL) -> Request:
    return Request.from_url("POST", url, headers={"content-type": "application/json"}, body=body)


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", URL),
        ("PUT", URL),
        ("POST", "https://api.linear.app/graphql/"),
        ("POST", "https://api.linear.app/GRAPHQL"),
        ("POST", "https://api.linear.app/oauth/token"),
        ("POST", "https://api.linear.app/"),
    ],
)
def test_only_post_graphql_is_read(linear: LinearAdapter, method: str, url: str) -> None:
    result = linear.classify(Request.from_url(method, url, body=gql("query { viewer { id } }")))
    assert result.operations == ("unknown",)
    assert result.unknown_code == LINEAR_POLICY
    assert "POST /graphql" in result.note


def test_a_mode_denial_reports_linear_policy(linear: LinearAdapter) -> None:
    """Seed 003 keeps Linear's code for every refusal on its host, not mode_denied."""
    result = linear.classify(post(gql('mutation { issueCreate(input: {teamId: "t", title: "x"}) { success } }')))
    verdict = evaluate(result, Grant(Mode.ADVISORY))
    assert not verdict.allowed
    assert verdict.code == LINEAR_POLICY
    assert evaluate(result, Grant(Mode.ISSUES_ONLY)).allowed


def test_a_comment_is_allowed_by_the_converse_capability(linear: LinearAdapter) -> None:
    result = linear.classify(post(gql('mutation { commentCreate(input: {issueId: "i", body: "x"}) { success } }')))
    assert evaluate(result, Grant(Mode.ADVISORY, frozenset({CONVERSE}))).allowed
    assert evaluate(result, Grant(Mode.ADVISORY)).code == LINEAR_POLICY


def test_unmapped_mutations_are_named_in_the_note(linear: LinearAdapter) -> None:
    fields = " ".join(f'd{i}: issueDelete(id: "{i}") {{ success }}' for i in range(2))
    fields += ' a: issueArchive(id: "x") { success } t: teamDelete(id: "t") { success } w: webhookCreate(input: {}) { success }'
    result = linear.classify(post(gql(f"mutation {{ {fields} }}")))
    assert result.operations == ("unknown",)
    assert result.note == "mutation issueDelete, issueArchive, teamDelete and 1 more is not allowed through the Linear policy"
    assert result.details["fields"] == ("issueDelete", "issueDelete", "issueArchive", "teamDelete", "webhookCreate")


@pytest.mark.parametrize(
    ("input_", "expected"),
    [
        ({"teamId": "t", "title": "x"}, ("issue.create",)),
        ({"teamId": "t", "title": "x", "parentId": None}, ("issue.create",)),
        ({"teamId": "t", "title": "x", "parentId": "p"}, ("issue.create", "issue.relate")),
    ],
)
def test_issue_create_relates_only_when_it_sets_a_parent(
    linear: LinearAdapter, input_: dict[str, object], expected: tuple[str, ...]
) -> None:
    query = "mutation($input: IssueCreateInput!) { issueCreate(input: $input) { success } }"
    assert linear.classify(post(gql(query, {"input": input_}))).operations == expected


def test_reparenting_an_issue_is_also_a_link(linear: LinearAdapter) -> None:
    query = "mutation($id: String!, $p: String) { issueUpdate(id: $id, input: {parentId: $p}) { success } }"
    assert linear.classify(post(gql(query, {"id": "i", "p": "parent"}))).operations == ("issue.edit", "issue.relate")
    assert linear.classify(post(gql(query, {"id": "i"}))).operations == ("issue.edit",)


def test_a_missing_input_variable_does_not_raise(linear: LinearAdapter) -> None:
    query = "mutation($input: IssueCreateInput!) { issueCreate(input: $input) { success } }"
    assert linear.classify(post(gql(query))).operations == ("issue.create",)


def test_limits_are_configurable(linear: LinearAdapter) -> None:
    fields = " ".join(f"f{i}: viewer {{ id }}" for i in range(5))
    body = gql(f"query {{ {fields} }}")
    assert linear.classify(post(body)).operations == ("read",)
    linear = configured(linear, {"field_limit": 4})
    refused = linear.classify(post(body))
    assert refused.operations == ("unknown",)
    assert refused.note == "more than 4 top-level fields"
    linear = configured(linear, {"body_limit": len(body) - 1, "field_limit": 32})
    assert linear.classify(post(body)).note == f"body over the {len(body) - 1}-byte limit"


def test_default_limits_are_32_kib_and_32_fields(linear: LinearAdapter) -> None:
    at_limit = gql("query { viewer { id } }", {"pad": ""})
    padded = gql("query { viewer { id } }", {"pad": "x" * (32 * 1024 - len(at_limit))})
    assert len(padded) == 32 * 1024
    assert linear.classify(post(padded)).operations == ("read",)
    over = gql("query { viewer { id } }", {"pad": "x" * (32 * 1024 - len(at_limit) + 1)})
    assert linear.classify(post(over)).operations == ("unknown",)
    fields = " ".join(f"f{i}: viewer {{ id }}" for i in range(32))
    assert linear.classify(post(gql(f"query {{ {fields} }}"))).operations == ("read",)
    assert linear.classify(post(gql(f"query {{ {fields} x: viewer {{ id }} }}"))).operations == ("unknown",)


@pytest.mark.parametrize(
    "options",
    [{"body_limit": 0}, {"field_limit": -1}, {"body_limit": "32k"}, {"field_limit": True}, {"token_limit": 5}],
)
def test_bad_options_name_the_plugin(linear: LinearAdapter, options: dict[str, object]) -> None:
    with pytest.raises(PolicyError, match=r"adapters\.linear\.") as info:
        configured(linear, options)
    assert next(iter(options)) in str(info.value)


def test_a_refused_configure_keeps_the_previous_limits(linear: LinearAdapter) -> None:
    with pytest.raises(PolicyError):
        configured(linear, {"body_limit": 100, "field_limit": 0})
    assert (linear.body_limit, linear.field_limit) == (32 * 1024, 32)


def test_the_api_key_is_sent_bare(linear: LinearAdapter) -> None:
    request = post(gql("query { viewer { id } }"))
    assert linear.credential_headers(request, "lin_api_0123") == {"authorization": "lin_api_0123"}
    assert linear.credential_headers(request, "Bearer lin_oauth_9") == {"authorization": "Bearer lin_oauth_9"}


def test_a_query_is_read_whatever_its_fields(linear: LinearAdapter) -> None:
    """Queries cannot write on Linear; their field names are not checked against a list."""
    body = json.dumps({"query": "query Anything { issueSearch(query: \"x\") { nodes { id } } }"}).encode()
    assert linear.classify(post(body)).operations == ("read",)


def test_an_option_left_out_returns_to_its_default(linear: LinearAdapter) -> None:
    linear = configured(linear, {"body_limit": 1000, "field_limit": 3})
    linear = configured(linear, {"field_limit": 5})
    assert (linear.body_limit, linear.field_limit) == (32 * 1024, 5)


@pytest.mark.parametrize(("variables", "relates"), [
    ({}, True),  # the document's default applies: the server sets the parent
    ({"p": None}, False),  # a variable sent as null replaces its default
    ({"p": "OTHER"}, True),
])
def test_variable_defaults_apply_when_the_request_omits_the_variable(
    linear: LinearAdapter, variables: dict[str, object], relates: bool
) -> None:
    body = gql('mutation($p: String = "PARENT") { issueCreate(input: {title: "t", parentId: $p}) { success } }',
               variables)
    result = linear.classify(post(body))
    assert ("issue.relate" in result.operations) is relates
    assert "issue.create" in result.operations


def test_a_defaulted_input_object_is_read_as_the_server_reads_it(linear: LinearAdapter) -> None:
    body = gql('mutation($i: IssueUpdateInput = {parentId: "PARENT"}) { issueUpdate(id: "X", input: $i) { success } }')
    assert linear.classify(post(body)).operations == ("issue.edit", "issue.relate")
