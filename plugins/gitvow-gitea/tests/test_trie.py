"""The segment trie: chi's precedence, backtracking, rest parameters and subtrees."""

from __future__ import annotations

import pytest

from gitvow.routing import RouteTrie


def trie(*routes: tuple[str, str]) -> RouteTrie[str]:
    return RouteTrie((method, template, f"{method} {template}") for method, template in routes)


def test_a_literal_beats_a_parameter() -> None:
    t = trie(("PATCH", "/r/issues/{index}"), ("PATCH", "/r/issues/comments"))
    match = t.match("PATCH", ["r", "issues", "comments"])
    assert match is not None and match.value == "PATCH /r/issues/comments"
    match = t.match("PATCH", ["r", "issues", "5"])
    assert match is not None and match.params == {"index": "5"}


def test_a_dead_end_under_a_literal_falls_back_to_the_parameter() -> None:
    t = trie(("POST", "/pulls/{index}/merge"), ("GET", "/pulls/{base}/{head}"))
    match = t.match("GET", ["pulls", "main", "merge"])
    assert match is not None and match.params == {"base": "main", "head": "merge"}
    match = t.match("POST", ["pulls", "7", "merge"])
    assert match is not None and match.params == {"index": "7"}
    assert t.match("PUT", ["pulls", "7", "merge"]) is None


def test_a_rest_parameter_takes_the_remaining_segments() -> None:
    t = trie(("DELETE", "/{owner}/branches/{branch*}"))
    match = t.match("DELETE", ["team", "branches", "feature", "x", "y"])
    assert match is not None and match.params == {"owner": "team", "branch": "feature/x/y"}
    assert t.match("DELETE", ["team", "branches"]) is None
    assert t.match("DELETE", ["team", "branches", "a", "", "b"]) is None


def test_a_subtree_claims_what_nothing_more_specific_does() -> None:
    t = trie(("*", "/user/**"), ("POST", "/user/repos"))
    exact = t.match("POST", ["user", "repos"])
    assert exact is not None and exact.value == "POST /user/repos"
    for method, path in (("POST", ["user", "keys"]), ("DELETE", ["user", "keys", "9"]), ("PUT", ["user", "repos"])):
        block = t.match(method, path)
        assert block is not None and block.value == "* /user/**"
    assert t.match("POST", ["user"]) is None
    assert t.match("POST", ["users", "x"]) is None


def test_an_empty_parameter_does_not_match() -> None:
    t = trie(("PATCH", "/repos/{owner}/{repo}"))
    assert t.match("PATCH", ["repos", "", "app"]) is None


@pytest.mark.parametrize(
    ("routes", "error"),
    [
        ((("GET", "/a/{x}"), ("GET", "/a/{y}")), "registered twice"),
        ((("GET", "/a/{rest*}/b"),), "must end"),
        ((("GET", "/a/**/b"),), "must end"),
        ((("GET", "a/b"),), "must start with '/'"),
    ],
)
def test_bad_tables_are_refused(routes: tuple[tuple[str, str], ...], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        trie(*routes)


def test_size_counts_registrations() -> None:
    assert len(trie(("GET", "/a"), ("POST", "/a"), ("*", "/b/**"))) == 3
