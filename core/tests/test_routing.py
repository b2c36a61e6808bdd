"""The route trie every forge adapter dispatches REST calls with: precedence, spanning
parameters, backtracking, subtree claims, methods, and the tables it refuses."""

from __future__ import annotations

import pytest

from gitvow.routing import ANY_METHOD, RouteTrie, TemplateError, template_params


def trie(*routes: tuple[str, str], **options: object) -> RouteTrie[str]:
    """A trie whose values name their own route, so a test can say which one matched."""
    return RouteTrie(((m, t, f"{m} {t}") for m, t in routes), **options)  # type: ignore[arg-type]


def value(t: RouteTrie[str], method: str, path: str | list[str]) -> str | None:
    found = t.match(method, path)
    return None if found is None else found.value


# -- precedence ---------------------------------------------------------------------------


def test_a_literal_beats_a_parameter_whatever_the_order() -> None:
    for routes in ((("POST", "/p/{id}"), ("POST", "/p/import")), (("POST", "/p/import"), ("POST", "/p/{id}"))):
        t = trie(*routes)
        assert value(t, "POST", "/p/import") == "POST /p/import"
        found = t.match("POST", "/p/42")
        assert found is not None and found.value == "POST /p/{id}" and found.params == {"id": "42"}


def test_a_parameter_beats_a_subtree_claim() -> None:
    t = trie(("POST", "/p/{id}"), ("POST", "/p/**"))
    assert value(t, "POST", "/p/7") == "POST /p/{id}"
    assert value(t, "POST", "/p/7/x") == "POST /p/**"


def test_colon_and_brace_parameters_are_the_same_thing() -> None:
    t = trie(("PUT", "/projects/:project/issues/{iid}"))
    found = t.match("PUT", ["projects", "g/p", "issues", "3"])
    assert found is not None and found.params == {"project": "g/p", "iid": "3"}
    assert found.values == ("g/p", "3") and found.template == "/projects/:project/issues/{iid}"
    assert (found.param("project"), found.param("iid"), found.param("id")) == ("g/p", "3", None)


# -- backtracking -------------------------------------------------------------------------


def test_a_dead_end_under_a_literal_falls_back_to_the_parameter() -> None:
    t = trie(("POST", "/p/import"), ("POST", "/p/{id}/issues"))
    found = t.match("POST", "/p/import/issues")
    assert found is not None and found.value == "POST /p/{id}/issues" and found.params == {"id": "import"}


def test_routes_with_different_names_share_a_slot_and_keep_their_names() -> None:
    t = trie(("POST", "/pulls/{index}/merge"), ("GET", "/pulls/{base}/{head}"))
    get = t.match("GET", "/pulls/main/merge")
    assert get is not None and get.params == {"base": "main", "head": "merge"}
    post = t.match("POST", "/pulls/7/merge")
    assert post is not None and post.params == {"index": "7"}
    assert t.match("PUT", "/pulls/7/merge") is None


# -- spanning parameters ------------------------------------------------------------------


def test_a_spanning_parameter_takes_several_segments_mid_path() -> None:
    t = trie(("PUT", "/r/branches/{branch}/protection"), spanning={"branch"}.__contains__)
    found = t.match("PUT", "/r/branches/feature/x/y/protection")
    assert found is not None and found.params == {"branch": "feature/x/y"}
    assert t.match("PUT", "/r/branches/protection") is None


def test_a_spanning_parameter_takes_the_shortest_run_that_completes_a_route() -> None:
    t = trie(("GET", "/c/{path}/raw/{ref}"), spanning={"path", "ref"}.__contains__)
    found = t.match("GET", "/c/a/raw/b/raw/c")
    assert found is not None and found.params == {"path": "a", "ref": "b/raw/c"}


def test_only_parameters_that_may_span_get_several_segments() -> None:
    """``{branch}`` spans, ``{name}`` in the same slot does not, even when it is the route reached."""
    t = trie(("DELETE", "/b/{name}/lock"), ("PUT", "/b/{branch}/lock"), spanning={"branch"}.__contains__)
    assert value(t, "PUT", "/b/x/y/lock") == "PUT /b/{branch}/lock"
    assert t.match("DELETE", "/b/x/y/lock") is None
    assert value(t, "DELETE", "/b/x/lock") == "DELETE /b/{name}/lock"


def test_a_rest_parameter_takes_the_remaining_non_empty_segments() -> None:
    t = trie(("DELETE", "/{owner}/branches/{branch*}"), ("DELETE", "/{owner}/branches/{name}/x"))
    found = t.match("DELETE", ["team", "branches", "feature", "x", "y"])
    assert found is not None and found.params == {"owner": "team", "branch": "feature/x/y"}
    assert value(t, "DELETE", ["team", "branches", "f", "x"]) == "DELETE /{owner}/branches/{name}/x"
    assert t.match("DELETE", ["team", "branches"]) is None
    assert t.match("DELETE", ["team", "branches", "a", "", "b"]) is None


# -- subtree claims -----------------------------------------------------------------------


def test_a_double_star_claims_what_is_below_and_nothing_more_specific_takes() -> None:
    t = trie((ANY_METHOD, "/user/**"), ("POST", "/user/repos"))
    assert value(t, "POST", "/user/repos") == "POST /user/repos"
    assert value(t, "PUT", "/user/repos") == "* /user/**"
    assert value(t, "DELETE", "/user/keys/9") == "* /user/**"
    assert t.match("POST", "/user") is None
    assert t.match("POST", "/users/x") is None


def test_a_single_star_also_claims_its_own_node() -> None:
    t = trie(("POST", "/p/{id}/flags/*"), ("POST", "/p/{id}/flags/{fid}/x"))
    for path in ("/p/1/flags", "/p/1/flags/2", "/p/1/flags/2/y/z"):
        found = t.match("POST", path)
        assert found is not None and found.value == "POST /p/{id}/flags/*" and found.params == {"id": "1"}
    assert value(t, "POST", "/p/1/flags/2/x") == "POST /p/{id}/flags/{fid}/x"
    assert t.match("PUT", "/p/1/flags") is None


# -- methods ------------------------------------------------------------------------------


def test_methods_are_exact_and_a_wildcard_serves_the_rest() -> None:
    t = trie(("POST", "/a"), (ANY_METHOD, "/a"))
    assert value(t, "POST", "/a") == "POST /a"
    assert value(t, "PATCH", "/a") == "* /a"
    assert value(trie(("POST", "/a")), "post", "/a") is None


def test_fallback_methods_take_the_route_another_method_has() -> None:
    routes = [("POST", "/a", "post a"), ("GET", "/b/{x}", "get b"), ("POST", "/b/{x}", "post b"), ("PUT", "/b/c/d", "")]
    t = RouteTrie(routes, fallback_methods={"HEAD"})
    assert value(t, "HEAD", "/a") == "post a"
    assert value(t, "HEAD", "/b/1") == "get b"
    assert value(t, "HEAD", "/b/c") == "get b"  # after the literal ``c`` dead-ends: the full walk
    assert t.match("PUT", "/a") is None and t.match("PUT", "/b/1") is None


def test_fold_case_compares_literals_not_values() -> None:
    t = trie(("POST", "/Repos/{owner}/pulls"), fold_case=True)
    found = t.match("POST", "/REPOS/Octo/PULLS")
    assert found is not None and found.params == {"owner": "Octo"}
    assert value(trie(("POST", "/repos/{o}")), "POST", "/Repos/x") is None
    listed = t.match("POST", ["Repos", "a/B", "Pulls"])  # decoded segments may hold a slash
    assert listed is not None and listed.params == {"owner": "a/B"}


# -- no match -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/repos/o"), ("GET", "/repos/o/r/x"), ("GET", "/repos//r"), ("GET", "/"), ("GET", "/other/o/r")],
)
def test_no_route_is_none(method: str, path: str) -> None:
    assert trie(("GET", "/repos/{owner}/{repo}")).match(method, path) is None


def test_an_empty_segment_is_never_a_parameter_value() -> None:
    t = trie(("PATCH", "/repos/{owner}/{repo}"))
    assert t.match("PATCH", ["repos", "", "app"]) is None
    assert value(trie(("GET", "/")), "GET", "/") == "GET /"


# -- building -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("routes", "options", "error"),
    [
        ((("GET", "/a/{x}"), ("GET", "/a/{y}")), {}, "registered twice"),
        ((("GET", "/a/**"), ("GET", "/a/**")), {}, "registered twice"),
        ((("GET", "/a/{rest*}/b"),), {}, "must end"),
        ((("GET", "/a/**/b"),), {}, "must end"),
        ((("GET", "/a/*/b"),), {}, "must end"),
        ((("GET", "a/b"),), {}, "must start with '/'"),
        ((("GET", "/a//b"),), {}, "empty segment"),
        ((("GET", "/a/{x}/b/:x"),), {}, "named twice"),
        ((("GET", "/a/:x"), ("POST", "/a/:y/b")), {"uniform_names": True}, "where other routes have 'x'"),
    ],
)
def test_bad_tables_are_refused(routes: tuple[tuple[str, str], ...], options: dict[str, object], error: str) -> None:
    with pytest.raises(TemplateError, match=error) as caught:
        trie(*routes, **options)
    assert caught.value.template == routes[-1][1]


def test_a_refused_route_changes_nothing() -> None:
    t = trie(("GET", "/a/{x}"), spanning={"y"}.__contains__)
    with pytest.raises(TemplateError):
        t.add("GET", "/a/{y}", "spanning duplicate")
    assert t.match("GET", "/a/b/c") is None and len(t) == 1


def test_registered_finds_the_slot_whatever_the_names() -> None:
    t = trie(("POST", "/a/{x}"), ("POST", "/a/**"))
    entry = t.registered("POST", "/a/{other}")
    assert entry is not None and entry.template == "/a/{x}"
    assert t.registered("PUT", "/a/{x}") is None and t.registered("POST", "/b") is None
    claim = t.registered("POST", "/a/**")
    assert claim is not None and claim.claim == "**"


def test_registrations_are_listed() -> None:
    t = trie(("POST", "/b/**"), ("POST", "/a"), (ANY_METHOD, "/b/**"), ("GET", "/a"))
    assert len(t) == 4
    assert [(e.method, e.template) for e in t.entries()] == [
        ("POST", "/b/**"), ("POST", "/a"), ("*", "/b/**"), ("GET", "/a")
    ]
    assert [(m, t) for m, t, _ in t.templates()] == [("GET", "/a"), ("POST", "/a"), ("*", "/b/**"), ("POST", "/b/**")]


def test_template_params_names_the_parameters_in_order() -> None:
    assert template_params("/repos/{owner}/{repo}/compare/{base}...{head}") == ("owner", "repo", "base...head")
    assert template_params("/projects/:project/files/{path*}") == ("project", "path")
