"""One canonical path (refused before any adapter reads it) and one repository matcher."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.paths import PATH_NOT_CANONICAL, path_problem
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.repos import RepoPatterns, matches, matches_any
from gitvow.request import Classification, Request
from gitvow.verdict import Verdict

CANONICAL = [
    "/", "", "/repos/o/r/issues", "/repos/o/r/issues/", "/repos/o/r/contents/.github/workflows/ci.yml",
    "/repos/o/r/compare/main...feature", "/a/b%20c", "/api/v4/projects/1/repository/files/lib%2Eclass.rb",
    "/repos/o/r/git/refs/heads/a..b",
]
REFUSED = [
    ("/team//paused.git/git-receive-pack", "empty"),
    ("//repos/o/r/issues", "empty"),
    ("/repos/o/r/issues//", "empty"),
    ("/repos/o/./r/issues", "dot"),
    ("/repos/o/r/../x/issues", "dot"),
    ("/repos/o/r/..", "dot"),
    ("./repos", "dot"),
    ("/repos/o/%2e/r", "dot"),
    ("/repos/o/%2E%2e/r", "dot"),
    ("/repos/o/.%2e/r", "dot"),
    ("/repos/o%2Fr/issues", "slash"),
    ("/repos/o%2fr/issues", "slash"),
]


@pytest.mark.parametrize("path", CANONICAL)
def test_canonical_paths_pass(path: str) -> None:
    assert path_problem(path) is None


@pytest.mark.parametrize(("path", "word"), REFUSED)
def test_rewritable_paths_are_refused(path: str, word: str) -> None:
    problem = path_problem(path)
    assert problem is not None and word in problem


def test_an_encoded_slash_is_kept_only_where_the_forge_keeps_it() -> None:
    assert path_problem("/api/v4/projects/group%2Fsub%2Fproj/issues", encoded_slash=True) is None
    # What the encoded slashes join is a path too, and is held to the same rules.
    for joined in ("group%2F..%2Fpaused", "group%2F%2Fpaused", "group%2F.%2Fpaused", "%2Fpaused"):
        assert path_problem(f"/api/v4/projects/{joined}/issues", encoded_slash=True) is not None, joined


class Forge(Adapter):
    name = "forge"
    default_hosts = ("forge.test",)
    seen: list[str] = []

    def classify(self, request: Request) -> Classification:
        Forge.seen.append(request.path)
        return Classification(("issue.create",), repo="team/app")


class Slashy(Forge):
    name = "slashy"
    default_hosts = ("slashy.test",)
    encoded_slash = True


class Refusing(Gates):
    def __init__(self) -> None:
        self.recorded: list[str] = []

    def run_state(self, ctx: Context) -> Verdict | None:
        return Verdict.deny("repo_paused", "paused")

    def record(self, ctx: Context, outcome: str) -> None:
        self.recorded.append(outcome)


def _engine() -> Engine:
    plugins = Plugins.of(adapters=[Forge(), Slashy()])
    return Engine(Policy(), plugins)


@pytest.mark.parametrize("internal", [False, True])
def test_the_pipeline_refuses_a_rewritable_path_before_the_adapter_and_every_gate(internal: bool) -> None:
    engine = _engine()
    Forge.seen.clear()
    gates = Refusing()
    caller = Caller("control-plane", internal=True) if internal else Caller("bot", grant=Grant(Mode.ISSUES_AND_PRS))
    decision = engine.decide(Request("POST", "forge.test", "/team//app/issues"), caller, gates)
    assert decision.action is Action.DENY and decision.stage == "path"
    assert decision.reason == PATH_NOT_CANONICAL and decision.headers["X-Gitvow-Reason"] == PATH_NOT_CANONICAL
    assert decision.message is not None and "empty path segment" in decision.message
    assert Forge.seen == []  # no adapter read it
    assert gates.recorded == ["refused"]  # counted once, refused
    # explain's path (classify alone) says the same.
    _, classification = engine.classify(Request("POST", "forge.test", "/team/%2e%2e/app/issues"))
    assert classification is not None and classification.unknown_code == PATH_NOT_CANONICAL


def test_the_adapter_says_whether_an_encoded_slash_is_one_segment() -> None:
    engine = _engine()
    Forge.seen.clear()
    plain = engine.decide(Request("POST", "forge.test", "/team%2Fapp/issues"), Caller("bot"), Gates())
    kept = engine.classify(Request("POST", "slashy.test", "/team%2Fapp/issues"))[1]
    assert plain.reason == PATH_NOT_CANONICAL
    assert kept is not None and kept.operations == ("issue.create",)
    assert Forge.seen == ["/team%2Fapp/issues"]


# -- repository patterns -------------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "repo", "expected"), [
    ("team/*", "team/app", True),
    ("team/*", "Team/App", True),
    ("TEAM/app", "team/APP", True),
    ("team/*", "team/sub/app", False),  # fnmatch said True
    ("team/*", "team", False),
    ("*", "team/app", False),
    ("*/*", "team/app", True),
    ("team/**", "team/sub/app", True),
    ("team/**", "team/app", True),
    ("team/**", "team", False),
    ("**/app", "a/b/c/app", True),
    ("team/app-?", "team/app-1", True),
    ("team/app-?", "team/app-12", False),
    ("team/[ab]pp", "team/app", True),
    ("team/[!ab]pp", "team/app", False),
    ("team/[!ab]pp", "team/cpp", True),
    ("team/a*", "team/a/b", False),
    ("team/app", "team/app.git", False),
    ("team/[", "team/[", True),
])
def test_patterns_match_whole_segments(pattern: str, repo: str, expected: bool) -> None:
    assert matches(repo, pattern) is expected
    assert RepoPatterns([pattern]).matches(repo) is expected
    assert matches_any(repo, ["nothing/here", pattern]) is expected


def test_autonomy_keys_are_patterns_and_overlaps_take_the_lower_mode() -> None:
    grant = Grant(Mode.ADVISORY, autonomy={
        "team/*": Mode.ISSUES_PRS_MERGE,
        "team/app": Mode.ISSUES_ONLY,
        "*/app2": Mode.ISSUES_AND_PRS,
    })
    assert grant.mode_for("team/app") is Mode.ISSUES_ONLY  # an exact key wins
    assert grant.mode_for("team/other") is Mode.ISSUES_PRS_MERGE
    assert grant.mode_for("team/app2") is Mode.ISSUES_AND_PRS  # both patterns match: the lower
    assert grant.mode_for("team/sub/other") is Mode.ADVISORY  # * does not cross a slash
    assert grant.mode_for(None) is Mode.ADVISORY
