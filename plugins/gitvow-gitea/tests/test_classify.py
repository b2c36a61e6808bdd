"""Wire shapes of the ``gitea`` adapter beyond the fixtures: paths, bodies, options, credentials."""

from __future__ import annotations

import base64

import pytest

from gitvow.adapter import configured
from gitvow.errors import PolicyError
from gitvow.request import Request
from gitvow_gitea import GiteaAdapter
from gitvow_gitea.adapter import build_trie
from gitvow_gitea.routes import Route
from gitvow_gitsmart.adapter import push_body

API = "https://codeberg.org/api/v1/repos/team/app"


def classify(adapter: GiteaAdapter, method: str, url: str, body: bytes = b"") -> tuple[tuple[str, ...], str | None]:
    result = adapter.classify(Request.from_url(method, url, body=body))
    return result.operations, result.repo


def test_percent_encoded_literals_are_decoded_before_matching(gitea: GiteaAdapter) -> None:
    """``pull%73`` is ``pulls`` to Gitea's router, so it must be ``pulls`` here too."""
    assert classify(gitea, "POST", f"{API}/pull%73/7/merg%65") == (("pr.merge",), "team/app")


def test_an_encoded_slash_stays_inside_one_segment(gitea: GiteaAdapter) -> None:
    assert classify(gitea, "DELETE", f"{API}/branches/feature%2Fx") == (("ref.write", "ref.delete"), "team/app")
    assert classify(gitea, "PATCH", "https://codeberg.org/api/v1/repos/team%2Fevil/app") == (("repo.admin",), "team/evil/app")


@pytest.mark.parametrize("path", ["/pulls/../issues", "/pulls/%2e%2e/issues", "//pulls/7/merge", "/pulls/./7/merge"])
def test_paths_a_front_end_would_rewrite_are_unknown(gitea: GiteaAdapter, path: str) -> None:
    """The core's strict splitter: empty and dot segments (plain or encoded) are refused."""
    for method in ("GET", "POST"):
        assert classify(gitea, method, f"{API}{path}")[0] == ("unknown",)


def test_archiving_a_repository_is_also_repo_delete(gitea: GiteaAdapter) -> None:
    assert classify(gitea, "PATCH", API, b'{"archived": true}')[0] == ("repo.admin", "repo.delete")
    assert classify(gitea, "PATCH", API, b'{"archived": false, "description": "x"}')[0] == ("repo.admin",)
    assert classify(gitea, "PATCH", API, b"not json")[0] == ("repo.admin",)


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_reads_anywhere_are_read(gitea: GiteaAdapter, method: str) -> None:
    assert classify(gitea, method, f"{API}/anything/at/all") == (("read",), "team/app")
    assert classify(gitea, method, "https://codeberg.org/api/v1/repos/issues/search?q=x") == (("read",), None)
    assert classify(gitea, method, "https://codeberg.org/explore/repos") == (("read",), None)


def test_refusals_carry_their_reason(gitea: GiteaAdapter) -> None:
    unlink = gitea.classify(Request.from_url("DELETE", f"{API}/issues/3/blocks"))
    assert unlink.operations == ("unknown",) and "unlinking" in unlink.note and unlink.repo == "team/app"
    nowhere = gitea.classify(Request.from_url("POST", f"{API}/pulls/7/frobnicate"))
    assert nowhere.note == "POST /api/v1/repos/team/app/pulls/7/frobnicate is not a known Gitea API route"
    form = gitea.classify(Request.from_url("POST", "https://codeberg.org/team/app/issues/new", body=b"title=x"))
    assert form.operations == ("unknown",) and "/api/v1" in form.note


def test_a_method_named_like_the_wildcard_is_refused(gitea: GiteaAdapter) -> None:
    assert classify(gitea, "*", "https://codeberg.org/api/v1/user/keys")[0] == ("unknown",)


def test_a_refused_route_without_a_reason_cannot_be_registered() -> None:
    with pytest.raises(ValueError, match="without a reason"):
        build_trie((Route("POST", "/x", "unknown"),))


def test_git_paths_delegate_to_gitsmart(gitea: GiteaAdapter) -> None:
    body = push_body(("0" * 40, "b" * 40, "refs/heads/topic"))
    result = gitea.classify(Request.from_url("POST", "https://codeberg.org/team/app.git/git-receive-pack", body=body))
    assert result.operations == ("git.push",) and result.repo == "team/app"
    assert [r.ref for r in result.refs] == ["refs/heads/topic"]


def test_a_sub_path_instance(gitea: GiteaAdapter) -> None:
    gitea = configured(gitea, {"prefix": "/gitea/"})
    base = "https://forge.example.test/gitea"
    assert classify(gitea, "POST", f"{base}/api/v1/repos/team/app/pulls") == (("pr.create",), "team/app")
    assert classify(gitea, "GET", f"{base}/team/app.git/info/refs?service=git-receive-pack") == (("git.push",), "team/app")
    assert classify(gitea, "POST", "https://forge.example.test/api/v1/repos/team/app/pulls")[0] == ("unknown",)
    assert classify(gitea, "POST", "https://forge.example.test/giteax/api/v1/repos/team/app/pulls")[0] == ("unknown",)


@pytest.mark.parametrize("options", [{"prefix": "gitea"}, {"prefix": 3}, {"base_url": "/x"}])
def test_bad_options_name_the_plugin(gitea: GiteaAdapter, options: dict[str, object]) -> None:
    with pytest.raises(PolicyError, match=r"adapters\.gitea\."):
        configured(gitea, options)


def test_credentials_are_token_for_the_api_and_basic_for_git(gitea: GiteaAdapter) -> None:
    api = Request.from_url("POST", f"{API}/issues")
    assert gitea.credential_headers(api, "t0k") == {"authorization": "token t0k"}
    git = Request.from_url("POST", "https://codeberg.org/team/app.git/git-receive-pack")
    basic = gitea.credential_headers(git, "t0k")["authorization"]
    assert base64.b64decode(basic.removeprefix("Basic ")) == b"t0k:x-oauth-basic"
    kept = gitea.credential_headers(git, "bot:t0k")["authorization"]
    assert base64.b64decode(kept.removeprefix("Basic ")) == b"bot:t0k"


def test_relay_hints_name_tea_and_the_route(gitea: GiteaAdapter) -> None:
    assert "tea pr create" in gitea.relay_hints("pr.create")
    assert "tea pr merge" in gitea.relay_hints("pr.merge")
    assert gitea.relay_hints("team-merge") == ()
