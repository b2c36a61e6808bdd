"""Hosts, credentials, relay hints and discovery of the ``github`` adapter."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins, installed, load
from gitvow.policy.load import load_policy, parse_policy
from gitvow.relay import APPROVAL
from gitvow.request import Request
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.hosts import Surface, route

TOKEN = "ghs_0123456789abcdef"


class WithToken(Gates):
    def credential(self, ctx: Context) -> str | None:
        return TOKEN


def test_discovered_through_its_entry_point() -> None:
    plugins = installed()
    assert isinstance(plugins.adapters.get("github"), GitHubAdapter)
    info = next(i for i in plugins.infos if i.name == "github")
    assert info.distribution == "gitvow-github" and info.adapters == ("github",)


@pytest.mark.parametrize(
    ("host", "path", "surface", "below"),
    [
        ("api.github.com", "/repos/o/r/pulls", Surface.REST, "/repos/o/r/pulls"),
        ("api.github.com", "/graphql", Surface.GRAPHQL, "/graphql"),
        ("uploads.github.com", "/repos/o/r/releases/1/assets", Surface.REST, "/repos/o/r/releases/1/assets"),
        ("github.com", "/o/r.git/info/refs", Surface.WEB, "/o/r.git/info/refs"),
        ("ghe.corp.test", "/api/v3/repos/o/r/pulls", Surface.REST, "/repos/o/r/pulls"),
        ("ghe.corp.test", "/api/v3", Surface.REST, "/"),
        ("ghe.corp.test", "/api/graphql", Surface.GRAPHQL, "/api/graphql"),
        ("ghe.corp.test", "/api/uploads/repos/o/r/releases/1/assets", Surface.REST, "/repos/o/r/releases/1/assets"),
        ("ghe.corp.test", "/o/r.git/git-receive-pack", Surface.WEB, "/o/r.git/git-receive-pack"),
        ("ghe.corp.test", "/api/v3x/repos", Surface.WEB, "/api/v3x/repos"),
    ],
)
def test_host_routing(host: str, path: str, surface: Surface, below: str) -> None:
    assert route(host, path).surface is surface and route(host, path).path == below


def test_ghes_host_from_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[hosts]\n"ghe.corp.test" = "github"\n"ghe.corp.test:8443" = "github"\n\n[adapters.github]\ngraphql_body_limit = 2048\n')
    plugins = load()  # fresh instances: configuring them must not leak into other tests
    engine = Engine(load_policy(path, relays=plugins.relays), plugins)
    for url in ("https://ghe.corp.test/api/v3/repos/o/r/pulls/1/merge", "https://ghe.corp.test:8443/api/v3/repos/o/r/pulls/1/merge"):
        decision = engine.decide(Request.from_url("PUT", url), Caller("t", Grant(Mode.ISSUES_PRS_MERGE)))
        assert (decision.adapter, decision.reason) == ("github", "hard_deny")
        assert decision.classification is not None and decision.classification.repo == "o/r"
    assert engine.hosts.intercepts("ghe.corp.test") and engine.hosts.intercepts("uploads.github.com")
    assert engine.adapters["github"].reader.body_limit == 2048  # type: ignore[attr-defined]
    assert plugins.adapter("github").reader.body_limit != 2048, "the shared instance is left as discovered"  # type: ignore[attr-defined]


def test_credentials_replace_whatever_the_agent_sent(engine: Engine) -> None:
    caller = Caller("t", Grant(Mode.ISSUES_AND_PRS))
    rest = Request.from_url("GET", "https://api.github.com/user", headers={"Authorization": "token agent-secret"})
    decision = engine.decide(rest, caller, WithToken())
    assert decision.action is Action.FORWARD
    assert decision.headers == {"authorization": f"Bearer {TOKEN}"}
    graphql = Request.from_url("POST", "https://api.github.com/graphql", body=b'{"query":"{ viewer { login } }"}')
    assert engine.decide(graphql, caller, WithToken()).headers == {"authorization": f"Bearer {TOKEN}"}
    git = Request.from_url("GET", "https://github.com/o/r.git/info/refs?service=git-upload-pack",
                           headers={"Authorization": "Basic YWdlbnQ6c2VjcmV0"})
    headers = engine.decide(git, caller, WithToken()).headers
    assert headers == {"authorization": "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()}


def test_ghes_git_gets_basic_auth(adapter: GitHubAdapter) -> None:
    request = Request.from_url("POST", "https://ghe.corp.test/o/r.git/git-upload-pack")
    assert adapter.credential_headers(request, "u:p") == {"authorization": "Basic " + base64.b64encode(b"u:p").decode()}
    api = Request.from_url("POST", "https://ghe.corp.test/api/v3/repos/o/r.git/x")
    assert adapter.credential_headers(api, "t") == {"authorization": "Bearer t"}


#: An operator's own relay commands ([relays.NAME]): their denials name the forge tools not to use.
OPERATOR_RELAYS: dict[str, object] = {
    "operations": {"pr.create": {"relay": "team-open-pr"}, "pr.merge": {"relay": "team-merge"}},
    "relays": {"team-open-pr": {"usage": "team-open-pr --title TITLE --body-file FILE", "what": "opening a pull request"},
               "team-merge": {"usage": "team-merge PR_NUMBER", "what": "merging a pull request"}},
}


@pytest.mark.parametrize(
    ("method", "url", "relay", "hints"),
    [
        ("POST", "https://api.github.com/repos/o/r/pulls", "team-open-pr", ("gh pr create", "create_pull_request")),
        ("PUT", "https://api.github.com/repos/o/r/pulls/1/merge", "team-merge", ("gh pr merge", "merge_pull_request", "gh api -X PUT")),
    ],
)
def test_relay_denials_name_the_github_tools_not_to_use(
    adapter: GitHubAdapter, method: str, url: str, relay: str, hints: tuple[str, ...]
) -> None:
    plugins = Plugins.of(adapters=[adapter], relays=[APPROVAL])
    engine = Engine(parse_policy(OPERATOR_RELAYS, relays=plugins.relays), plugins)
    decision = engine.decide(Request.from_url(method, url, body=b"{}"), Caller("t", Grant(Mode.ISSUES_PRS_MERGE)))
    message = decision.message or ""
    assert decision.reason == "hard_deny" and engine.relays[relay].usage in message
    for hint in hints:
        assert hint in message.split("do not use", 1)[1]
    assert message.endswith("reason=hard_deny") and "\n" not in message


def test_web_host(adapter: GitHubAdapter) -> None:
    web = "https://github.com"
    assert adapter.classify(Request.from_url("GET", f"{web}/octo/app/pulls")).operations == ("read",)
    assert adapter.classify(Request.from_url("GET", f"{web}/login/device/code")).operations == ("read",)
    post = adapter.classify(Request.from_url("POST", f"{web}/octo/app/issues"))
    assert post.operations == ("unknown",) and post.note
    git = adapter.classify(Request.from_url("POST", f"{web}/octo/app/git-upload-pack", body=b"0000"))
    assert (git.operations, git.repo) == (("git.fetch",), "octo/app")


@pytest.mark.parametrize(
    "path",
    ["/repos/octo/app/pulls/", "/REPOS/octo/app/Pulls", "/repos/octo/app/%70ulls", "//repos//octo/app/pulls"],
)
def test_spellings_of_one_route(adapter: GitHubAdapter, path: str) -> None:
    got = adapter.classify(Request.from_url("POST", "https://api.github.com" + path))
    assert (got.operations, got.repo) == (("pr.create",), "octo/app")


def test_reads_outside_the_inventory_are_reads(adapter: GitHubAdapter) -> None:
    got = adapter.classify(Request.from_url("GET", "https://api.github.com/repos/octo/app/brand-new-thing"))
    assert (got.operations, got.repo) == (("read",), "octo/app")
    deep = adapter.classify(Request.from_url("PUT", "https://api.github.com/repos/o/r/contents/" + "d/" * 100))
    assert deep.operations == ("unknown",)


def test_host_names_are_case_insensitive(adapter: GitHubAdapter) -> None:
    request = Request("PUT", "API.GitHub.com", "/repos/octo/app/pulls/1/merge")
    assert adapter.classify(request).operations == ("pr.merge",)


def test_backtracking_is_bounded(adapter: GitHubAdapter) -> None:
    """A deep path under a slash-carrying parameter is still matched (or refused) promptly."""
    deep = "/repos/octo/app/branches/" + "a/" * 40 + "protection"
    got = adapter.classify(Request.from_url("PUT", "https://api.github.com" + deep))
    assert (got.operations, got.repo) == (("branch.protect",), "octo/app")


def test_remembered_classifications_are_keyed_by_method_and_exact_path(adapter: GitHubAdapter) -> None:
    """Asked again, in any order, each method and spelling gets its own answer, never another's."""
    asks = [("GET", "/repos/octo/app/pulls/1/merge", ("read",)), ("PUT", "/repos/octo/app/pulls/1/merge", ("pr.merge",)),
            ("put", "/repos/octo/app/pulls/1/merge", ("pr.merge",)), ("PUT", "/repos/octo/app/pulls/1/merge/x", ("unknown",)),
            ("DELETE", "/repos/octo/app/pulls/1/merge", ("unknown",)), ("PUT", "/repos/octo/app/pulls/1/MERGE", ("pr.merge",)),
            ("POST", "/repos/octo/app/pulls", ("pr.create",)), ("POST", "/repos/octo/other/pulls", ("pr.create",))]
    for _ in range(2):
        for method, path, operations in asks:
            got = adapter.classify(Request(method, "api.github.com", path))
            assert got.operations == operations, (method, path)
            assert got.repo == "/".join(path.split("/")[2:4])
