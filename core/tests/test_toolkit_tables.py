"""The toolkit an adapter builds on: the canonical path, route tables of several operations,
the verb-override reader and refusal bodies in a forge's own shape."""

from __future__ import annotations

import json

import pytest

from gitvow import refusal
from gitvow.overrides import method_override
from gitvow.paths import PathRefused, canonical_path, decode_unreserved
from gitvow.request import Request
from gitvow.routing import Match, Route, RouteTable, TemplateError


@pytest.mark.parametrize(("path", "canonical"), [
    ("/repos/te%61m/app", "/repos/team/app"),
    ("/repos/%7Eme/%2d%2E%5f", "/repos/~me/-._"),
    ("/a%2fb/c%20d", "/a%2Fb/c%20d"),
    ("/a/%zz/%4", "/a/%zz/%4"),
    ("/plain/path", "/plain/path"),
])
def test_unreserved_characters_are_decoded_and_other_escapes_upper_cased(path: str, canonical: str) -> None:
    assert decode_unreserved(path) == canonical


def test_an_encoded_dot_segment_becomes_a_dot_segment_and_is_refused() -> None:
    with pytest.raises(PathRefused, match="dot segment"):
        canonical_path("/repos/o/r/%2e%2E/x")
    assert canonical_path("/api/v4/projects/g%2fp/files/lib%2Eclass.rb", encoded_slash=True) == (
        "/api/v4/projects/g%2Fp/files/lib.class.rb")
    with pytest.raises(PathRefused, match="slash"):
        canonical_path("/repos/o%2fr/issues")


def _labels(request: Request, match: Match[Route]) -> tuple[str, ...]:
    return ("issue.edit", "label.add") if b"labels" in request.body else ("issue.edit",)


TABLE = RouteTable.from_rows("""
    # comments and blank lines are skipped

    POST,PUT  /repos/{owner}/{repo}/issues/{n}        @labels
    POST      /repos/{owner}/{repo}/pulls             pr.create
    PUT       /repos/{owner}/{repo}/pulls/{n}/merge   pr.merge,pr.edit
    *         /repos/{owner}/{repo}/statuses/**       unknown ci
""", reasons={"ci": "written by CI"}, resolvers={"labels": _labels}, fold_case=True)


@pytest.mark.parametrize(("method", "path", "body", "operations"), [
    ("POST", "/repos/o/r/pulls", b"", ("pr.create",)),
    ("PUT", "/REPOS/o/r/pulls/1/merge", b"", ("pr.merge", "pr.edit")),
    ("PUT", "/repos/o/r/issues/1", b'{"labels": ["x"]}', ("issue.edit", "label.add")),
    ("POST", "/repos/o/r/issues/1", b'{"title": "x"}', ("issue.edit",)),
    ("DELETE", "/repos/o/r/statuses/abc/x", b"", ("unknown",)),
])
def test_a_route_table_gives_several_operations_and_resolves_by_body(
    method: str, path: str, body: bytes, operations: tuple[str, ...]
) -> None:
    request = Request("POST" if method == "*" else method, "forge.test", path, body=body)
    match = TABLE.match(method, request.segments)
    assert match is not None
    assert match.value.operations_for(request, match) == operations
    if "unknown" in operations:
        assert match.value.why == "written by CI"
    assert TABLE.match("DELETE", ["repos", "o", "r", "pulls"]) is None


@pytest.mark.parametrize(("rows", "problem"), [
    ("POST /a pr.creat", "not an operation"),
    ("POST /a unknown", "needs its reason"),
    ("POST /a unknown nope", "no reason named"),
    ("POST /a @nope", "no resolver"),
    ("POST /a pr.create\nPOST /a pr.edit", "registered twice"),
])
def test_a_bad_row_is_refused_when_the_table_is_built(rows: str, problem: str) -> None:
    with pytest.raises(TemplateError, match=problem):
        RouteTable.from_rows(rows, reasons={"ci": "x"})


@pytest.mark.parametrize(("headers", "query", "body", "content_type", "refused"), [
    ({"x-http-method-override": "DELETE"}, "", b"", "", True),
    ({}, "_method=DELETE", b"", "", True),
    ({}, "%5Fmethod=DELETE", b"", "", True),
    ({}, "", b'{"_method": "DELETE"}', "application/json", True),
    ({}, "", b'{"\\u005fmethod": "DELETE"}', "application/json", True),
    ({}, "", b"_method=DELETE", "application/x-www-form-urlencoded", True),
    ({}, "", b"[" * 50_000 + b'"method"', "application/json", True),  # unreadable, mentions method
    ({}, "", b'{"merge_method": "squash"}', "application/json", False),
    ({}, "", b'{"title": "x"}', "application/json", False),
])
def test_verb_overrides_are_refused(headers: dict[str, str], query: str, body: bytes, content_type: str,
                                    refused: bool) -> None:
    all_headers = {**headers, **({"content-type": content_type} if content_type else {})}
    request = Request("POST", "forge.test", "/x", query, all_headers, body)
    assert (method_override(request) is not None) is refused


def test_a_refusal_in_the_forges_own_shape() -> None:
    line = "gitvow refused pr.merge: no. reason=mode_denied"
    kind, body = refusal.json_shaped(line, "mode_denied", {"type": "error", "error": {"message": refusal.MESSAGE}})
    assert kind.startswith("application/json")
    assert json.loads(body) == {"type": "error", "error": {"message": line}, "gitvow_reason": "mode_denied"}
    _, listed = refusal.json_shaped(line, "x", {"errors": [{"message": refusal.MESSAGE, "code": refusal.CODE}]})
    assert json.loads(listed)["errors"] == [{"message": line, "code": "x"}]
    with pytest.raises(ValueError, match="MESSAGE"):
        refusal.json_shaped(line, "x", {"error": "nothing"})
