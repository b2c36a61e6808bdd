"""What the inventory test does not show: UUIDs resolved, refusal shapes, curl at the gate, encodings."""

from __future__ import annotations

import json

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import NO_GATES, Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.request import Request, Target
from gitvow_bitbucket import BitbucketAdapter

R = "https://api.bitbucket.org/2.0/repositories"


def test_a_uuid_names_no_repository_until_the_api_says_which(bitbucket: BitbucketAdapter) -> None:
    request = Request.from_url("POST", f"{R}/%7Bws-uuid%7D/%7Brepo-uuid%7D/pullrequests/1/merge")
    got = bitbucket.classify(request)
    assert got.operations == ("pr.merge",) and got.repo is None and not got.repo_established
    (target,) = got.targets
    asked: list[tuple[str, str]] = []

    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        asked.append((method, path))
        return 200, json.dumps({"full_name": "team/app", "uuid": "{repo-uuid}"}).encode()

    answers = bitbucket.resolve(got.targets, fetch)
    assert asked == [("GET", "/2.0/repositories/%7Bws-uuid%7D/%7Brepo-uuid%7D")]
    assert answers[target].repo == "team/app"


@pytest.mark.parametrize("answer", [(404, b"{}"), (200, b"not json"), (200, b'{"full_name": 3}'),
                                    (200, b'{"full_name": "a/b/c"}')])
def test_an_unclear_answer_leaves_the_uuid_unresolved(bitbucket: BitbucketAdapter, answer: tuple[int, bytes]) -> None:
    target = Target("repository", "{w}/{r}", at="/2.0/repositories/%7Bw%7D/%7Br%7D")
    assert bitbucket.resolve([target], lambda m, p, b: answer) == {}


def test_refusals_come_in_bitbucket_shapes(bitbucket: BitbucketAdapter) -> None:
    line = "gitvow refused pr.merge (POST /x): no. reason=mode_denied"
    _, cloud = bitbucket.refusal_body(Request.from_url("POST", f"{R}/team/app/pullrequests/1/merge"), line, "mode_denied")
    assert json.loads(cloud)["type"] == "error" and json.loads(cloud)["error"]["message"] == line
    dc = Request.from_url("POST", "https://bb.example.test/rest/api/1.0/projects/P/repos/r/pull-requests/1/merge")
    _, server = bitbucket.refusal_body(dc, line, "mode_denied")
    assert json.loads(server)["errors"][0]["message"] == line
    kind, git = bitbucket.refusal_body(Request.from_url("POST", "https://bitbucket.org/team/app.git/git-receive-pack"),
                                       line, "mode_denied")
    assert kind.startswith("text/plain") and line.encode() in git


def test_credentials_are_bearer_for_the_api_and_basic_for_git(bitbucket: BitbucketAdapter) -> None:
    api = bitbucket.credential_headers(Request.from_url("GET", f"{R}/team/app"), "tok")
    assert api == {"authorization": "Bearer tok"}
    git = bitbucket.credential_headers(Request.from_url("GET", "https://bitbucket.org/team/app.git/info/refs"), "tok")
    assert git["authorization"].startswith("Basic ")


@pytest.mark.parametrize(("argv", "operations", "repo"), [
    (["curl", "-X", "POST", f"{R}/team/app/pullrequests/1/merge"], ("pr.merge",), "team/app"),
    (["curl", "-d", "{}", f"{R}/team/app/pullrequests"], ("pr.create",), "team/app"),
    (["curl", "--json", "{}", f"{R}/te%61m/app/pullrequests/1/decline"], ("pr.edit",), "team/app"),
    (["curl", "-s", f"{R}/team/app/pullrequests"], ("read",), "team/app"),
    (["curl", "-XDELETE", f"{R}/team/app"], ("repo.delete",), "team/app"),
    (["curl", "-sSX", "POST", f"{R}/team/app/pullrequests/1/merge"], ("pr.merge",), "team/app"),
    (["curl", "-sd@body.json", f"{R}/team/app/pullrequests"], ("pr.create",), "team/app"),
    (["curl", "-H", "Authorization: Bearer x", "--request=PUT", f"{R}/team/app/issues/3"], ("issue.edit",), "team/app"),
    (["curl", "-sI", f"{R}/team/app"], ("read",), "team/app"),
    (["curl", "--", f"{R}/team/app"], ("read",), "team/app"),
    (["curl", "-K", "cfg", f"{R}/team/app"], ("unknown",), None),
    (["curl", "-X", "POST", f"{R}/team/x/../app/pullrequests/1/merge"], ("unknown",), None),
])
def test_curl_to_bitbucket_is_read_at_the_gate(bitbucket: BitbucketAdapter, argv: list[str],
                                               operations: tuple[str, ...], repo: str | None) -> None:
    call = bitbucket.classify_command(argv)
    assert call is not None and call.operations == operations and call.repo == repo


def test_curl_elsewhere_is_not_bitbucket(bitbucket: BitbucketAdapter) -> None:
    assert bitbucket.classify_command(["curl", "-X", "POST", "https://example.test/2.0/repositories/a/b"]) is None
    assert bitbucket.classify_command(["wget", f"{R}/team/app"]) is None


def test_an_encoded_name_cannot_dodge_a_repository_gate() -> None:
    engine = Engine(Policy(), Plugins.of(adapters=[BitbucketAdapter()]))
    grant = Grant(Mode.ISSUES_PRS_MERGE, autonomy={"team/app": Mode.ISSUES_ONLY})
    for path in ("/2.0/repositories/team/app/pullrequests/1/decline", "/2.0/repositories/te%61m/app/pullrequests/1/decline",
                 "/2.0/repositories/TEAM/%61pp/pullrequests/1/decline"):
        decision = engine.decide(Request("POST", "api.bitbucket.org", path), Caller("bot", grant), NO_GATES)
        assert decision.action is Action.DENY and decision.reason == "mode_denied", path


def test_data_center_versions_are_one_route(bitbucket: BitbucketAdapter) -> None:
    for version in ("1.0", "latest"):
        got = bitbucket.classify(Request.from_url(
            "POST", f"https://bb.example.test/rest/api/{version}/projects/PROJ/repos/app/pull-requests/7/merge"))
        assert got.operations == ("pr.merge",) and got.repo == "PROJ/app"


def test_the_web_clients_api_path_is_the_api(bitbucket: BitbucketAdapter) -> None:
    got = bitbucket.classify(Request.from_url("POST", "https://bitbucket.org/!api/2.0/repositories/team/app/pullrequests/1/merge"))
    assert got.operations == ("pr.merge",) and got.repo == "team/app"
    read = bitbucket.classify(Request.from_url("GET", "https://bitbucket.org/!api/2.0/repositories/other/app/src"))
    assert read.operations == ("read",) and read.repo == "other/app"
