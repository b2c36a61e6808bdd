"""What a write changes, judged by [branches], [paths], [size], [secrets]: the pure judge, the
policy keys, and the pipeline's ``change`` stage (5b) in its place."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from gitvow.adapter import Adapter
from gitvow.change import CREATED, DELETED, FAST_FORWARD, FORCED, Change, RefChange, SecretFinding, with_operations
from gitvow.change_rules import (
    DEFAULT_RULES,
    ChangeRules,
    compile_rules,
    judge,
    path_matches,
)
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant, evaluate_operation
from gitvow.gates import Asked, Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.needs import Lookup
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import parse_policy
from gitvow.relay import APPROVAL
from gitvow.request import Classification, Request

A, B = "a" * 40, "b" * 40


def push(*refs: tuple[str, str], paths: tuple[str, ...] = (), **kw: object) -> Change:
    return Change(refs=tuple(RefChange(f"refs/heads/{name}", A, B, kind) for name, kind in refs), paths=paths,
                  **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("path", "pattern", "expected"), [
    (".github/workflows/ci.yml", ".github/workflows/**", True),
    (".github/workflows/sub/x.yml", ".github/workflows/**", True),
    (".GitHub/Workflows/ci.yml", ".github/workflows/**", True),  # a case-folding checkout
    (".github/workflows/", ".github/workflows/**", True),  # the directory itself (something left it)
    (".github/workflows", ".github/workflows/**", True),  # an entry at the directory's own path: a blob, a link
    (".GitHub/Workflows", ".github/workflows/**", True),
    (".github", ".github/workflows/**", True),  # a blob in place of an ancestor removes the directory too
    (".githubx", ".github/workflows/**", False),
    ("infra", "infra/*/b.tf", True),
    ("infra/a", "infra/*/b.tf", False),  # a glob is not followed: an ordinary file there is not refused
    ("src/app.py", "src/*/x", False),
    ("docs/readme.md", "infra/*/b.tf", False),
    (".github/workflowsx/ci.yml", ".github/workflows/**", False),
    ("src/.github/workflows/ci.yml", ".github/workflows/**", False),  # anchored at the root
    ("CODEOWNERS", "CODEOWNERS", True),
    ("docs/CODEOWNERS", "CODEOWNERS", True),
    ("docs/CODEOWNERS.md", "CODEOWNERS", False),
    ("deploy/prod/app.yaml", "deploy", True),  # a directory name covers what is under it
    ("infra/a/b.tf", "infra/*/b.tf", True),
    ("infra/a/c/b.tf", "infra/*/b.tf", False),
])
def test_path_patterns(path: str, pattern: str, expected: bool) -> None:
    assert path_matches(path, pattern) is expected


def test_the_defaults_stage_ci_and_ownership_files_and_leave_the_rest() -> None:
    assert judge(push(("agent/x", FAST_FORWARD), paths=("src/app.py", "README.md")), DEFAULT_RULES, "a") is None
    for path in (".github/workflows/ci.yml", ".gitlab-ci.yml", ".forgejo/workflows/a.yml", ".gitea/workflows/b.yaml",
                 ".github/CODEOWNERS", "Jenkinsfile"):
        verdict = judge(push(("agent/x", FAST_FORWARD), paths=("src/a.py", path)), DEFAULT_RULES, "a")
        assert verdict is not None and verdict.code == "path_protected" and verdict.relay == "approval", path
        assert path in verdict.why


def test_refuse_beats_stage_and_rules_override_defaults() -> None:
    rules = compile_rules({"paths": {"rules": {".github/workflows/**": "refuse", "docs/**": "stage"}}})
    verdict = judge(push(("x", FAST_FORWARD), paths=("docs/a.md", ".github/workflows/ci.yml")), rules, None)
    assert verdict is not None and verdict.code == "path_protected" and verdict.relay is None
    none = compile_rules({"paths": {"defaults": False}})
    assert judge(push(("x", FAST_FORWARD), paths=(".github/workflows/ci.yml",)), none, None) is None


def test_branch_rules_order_and_codes() -> None:
    rules = compile_rules({"branches": {"allowed": ["agent/**"], "protected": ["agent/release"]},
                           "agents": {"special": {"branches": ["special/*"]}}})
    assert judge(push(("agent/x", CREATED)), rules, "a") is None
    assert judge(push(("main", FAST_FORWARD)), rules, "a").code == "branch_not_allowed"  # type: ignore[union-attr]
    assert judge(push(("agent/release", FAST_FORWARD)), rules, "a").code == "branch_protected"  # type: ignore[union-attr]
    assert judge(push(("AGENT/Release", FAST_FORWARD)), rules, "a").code == "branch_protected"  # type: ignore[union-attr]
    # an agent's own patterns replace the global ones
    assert judge(push(("special/x", FAST_FORWARD)), rules, "special") is None
    assert judge(push(("agent/x", FAST_FORWARD)), rules, "special").code == "branch_not_allowed"  # type: ignore[union-attr]
    # a tag is matched by its full ref name, so branch patterns never allow one
    tag = Change(refs=(RefChange("refs/tags/v1", "0" * 40, B, CREATED),))
    assert judge(tag, rules, "a").code == "branch_not_allowed"  # type: ignore[union-attr]


def test_the_default_branch_is_asked_only_when_the_listed_rules_pass() -> None:
    rules = compile_rules({"branches": {"allowed": ["agent/**"]}})
    assert rules.needs_default_branch(push(("agent/x", FAST_FORWARD)), "a")
    assert not rules.needs_default_branch(push(("main", FAST_FORWARD)), "a")  # refused without asking
    assert not compile_rules({"branches": {"default_branch": False}}).needs_default_branch(push(("x", CREATED)), "a")
    verdict = judge(push(("trunk", FAST_FORWARD)), DEFAULT_RULES, "a", default_branch="trunk")
    assert verdict is not None and verdict.code == "branch_protected" and "default branch" in verdict.why


def test_size_caps() -> None:
    rules = ChangeRules(max_files=2, max_added_bytes=100, max_object_bytes=50)
    assert judge(push(("x", CREATED), paths=("a", "b", "c")), rules, None).code == "change_too_large"  # type: ignore[union-attr]
    assert judge(push(("x", CREATED), added_bytes=101), rules, None).code == "change_too_large"  # type: ignore[union-attr]
    assert judge(push(("x", CREATED), largest=51, added_bytes=51), rules, None).code == "change_too_large"  # type: ignore[union-attr]
    assert judge(push(("x", CREATED), paths=("a",), added_bytes=100, largest=50), rules, None) is None


def test_secrets_are_named_by_kind_and_fingerprint_and_may_be_allowed() -> None:
    found = (SecretFinding("aws_access_key", "1a5d44a2dca19669", "src/cfg.py"),)
    verdict = judge(push(("x", CREATED), secrets=found), DEFAULT_RULES, None)
    assert verdict is not None and verdict.code == "secret_detected"
    assert "aws_access_key" in verdict.why and "1a5d44a2dca19669" in verdict.why and "src/cfg.py" in verdict.why
    allowed = compile_rules({"secrets": {"allow": ["1a5d44a2dca19669"]}})
    assert judge(push(("x", CREATED), secrets=found), allowed, None) is None
    assert judge(push(("x", CREATED), secrets=found), compile_rules({"secrets": {"enabled": False}}), None) is None


def test_unestablished_is_refused_first() -> None:
    verdict = judge(Change(unestablished="a thin pack", secrets=(SecretFinding("k", "f"),)), DEFAULT_RULES, None)
    assert verdict is not None and verdict.code == "change_unestablished"


def test_force_and_delete_are_operations_refused_at_every_mode_with_their_own_codes() -> None:
    change = push(("x", FORCED), ("y", DELETED))
    assert with_operations(("git.push",), change) == ("git.push", "ref.force", "ref.delete")
    assert with_operations(("git.push",), push(("x", FAST_FORWARD))) == ("git.push",)
    top = Grant(Mode.ISSUES_PRS_MERGE)
    assert evaluate_operation("ref.force", top).code == "ref_force"
    assert evaluate_operation("ref.delete", top).code == "ref_delete"


def test_policy_keys_validate_and_compile() -> None:
    policy = parse_policy({
        "branches": {"allowed": ["agent/**"], "protected": ["main"]},
        "paths": {"rules": {"deploy/**": "refuse"}},
        "size": {"max_files": 10},
        "secrets": {"allow": ["ab"]},
        "agents": {"coder": {"mode": "issues_and_prs", "branches": ["coder/*"]}},
        "operations": {"ref.force": {"relay": "approval"}},
    }, sections=(), relays={"approval": APPROVAL}, adapters=())
    rules = policy.change_rules
    assert rules.allowed == ("agent/**",) and rules.protected == ("main",) and rules.max_files == 10
    assert rules.allowed_for("coder") == ("coder/*",) and rules.path_verdict("deploy/x") == "refuse"
    assert rules.secrets_allow == {"ab"}
    with pytest.raises(PolicyError, match=r"paths\.rules"):
        parse_policy({"paths": {"rules": {"x/**": "allow"}}}, sections=(), relays={}, adapters=())
    with pytest.raises(PolicyError, match=r"size\.max_files"):
        parse_policy({"size": {"max_files": 0}}, sections=(), relays={}, adapters=())


# -- the pipeline's change stage ----------------------------------------------------------------


class _Pushes(Adapter):
    name = "pushes"

    def __init__(self, change: Change | None = None) -> None:
        self.change = change

    def classify(self, request: Request) -> Classification:
        assert self.change is not None
        return Classification(with_operations(("git.push",), self.change), repo="team/app", change=self.change)


class _Forge(Gates):
    knows_default_branch = True

    def __init__(self, default: str | None) -> None:
        self.default = default
        self.asked = 0
        self.order: list[str] = []

    def default_branch(self, ctx: Context) -> Asked[str | None]:
        self.asked += 1
        if self.default == "pending":
            return self._ask_the_forge()
        return self.default

    def _ask_the_forge(self) -> Generator[object, object, str | None]:
        answer = yield Lookup("scope", ())
        return "main" if answer == {"asked": True} else None

    def body(self, ctx: Context) -> None:
        self.order.append("body")


def drive_from(judging: Generator[object, object, Decision], first: object) -> Decision:
    try:
        judging.send(first)
    except StopIteration as done:
        result: Decision = done.value
        return result
    raise AssertionError("the engine asked twice")


def _decide(change: Change, gates: Gates, policy: dict[str, object] | None = None, *, approved: bool = False):  # type: ignore[no-untyped-def]
    adapter = _Pushes(change)
    plugins = Plugins.of(adapters=[adapter], relays=[APPROVAL])
    engine = Engine(parse_policy({"hosts": {"git.example.test": "pushes"}, **(policy or {})}, sections=(),
                                 relays=plugins.relays, adapters=("pushes",)), plugins)
    request = Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack")
    return engine.decide(request, Caller("a", Grant(Mode.ISSUES_AND_PRS), approved=approved), gates)


def test_the_stage_refuses_the_default_branch_it_asks_the_forge_for() -> None:
    gates = _Forge("main")
    decision = _decide(push(("main", FAST_FORWARD)), gates)
    assert decision.action is Action.DENY and decision.reason == "branch_protected" and decision.stage == "change"
    assert gates.asked == 1
    assert _decide(push(("agent/x", FAST_FORWARD)), gates).action is Action.FORWARD


def test_a_push_no_rule_needs_costs_no_lookup_and_an_unreadable_default_is_refused() -> None:
    gates = _Forge(None)
    decision = _decide(push(("agent/x", FAST_FORWARD)), gates, {"branches": {"default_branch": False}})
    assert decision.action is Action.FORWARD and gates.asked == 0
    decision = _decide(push(("agent/x", FAST_FORWARD)), gates)
    assert decision.reason == "change_unestablished" and gates.asked == 1
    # the stage's question goes to whoever drives the engine, and its answer comes back to the stage
    asking = _Forge("pending")
    adapter = _Pushes(push(("main", FAST_FORWARD)))
    plugins = Plugins.of(adapters=[adapter], relays=[APPROVAL])
    engine = Engine(parse_policy({"hosts": {"git.example.test": "pushes"}}, sections=(), relays=plugins.relays,
                                 adapters=("pushes",)), plugins)
    request = Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack")
    judging = engine.judge(request, Caller("a", Grant(Mode.ISSUES_AND_PRS)), asking)
    assert next(judging) == Lookup("scope", ())
    decision = drive_from(judging, {"asked": True})
    assert decision.reason == "branch_protected"


def test_a_protected_path_is_staged_after_the_body_gates_and_passes_once_approved() -> None:
    gates = _Forge("main")
    change = push(("agent/x", FAST_FORWARD), paths=(".github/workflows/ci.yml",))
    decision = _decide(change, gates)
    assert decision.action is Action.DENY and decision.staged and decision.reason == "path_protected"
    assert decision.stage == "change"  # staged by 5b, and reported as 5b's (not as the policy stage's)
    assert gates.order == ["body"]  # the body gates still ran: a request they refuse is never staged
    assert _decide(change, gates, approved=True).action is Action.FORWARD


def test_force_push_is_refused_by_policy_before_the_change_stage_unless_relayed() -> None:
    gates = _Forge("main")
    decision = _decide(push(("agent/x", FORCED)), gates)
    assert decision.reason == "ref_force" and decision.stage == "policy" and gates.asked == 0
    relayed = _decide(push(("agent/x", FORCED)), gates, {"operations": {"ref.force": {"relay": "approval"}}})
    assert relayed.staged and relayed.verdict is not None and relayed.verdict.operation == "ref.force"
    assert relayed.stage == "policy"
    assert _decide(push(("agent/x", DELETED)), gates).reason == "ref_delete"


@pytest.mark.parametrize(("directory", "pattern", "expected"), [
    (".github/", ".github/workflows/**", True),
    (".github/workflows/", ".github/workflows/**", True),
    ("src/", ".github/workflows/**", False),
    ("src/", "CODEOWNERS", True),  # a CODEOWNERS may have left src/
    ("deploy/prod/", "deploy", True),
])
def test_a_directory_something_left_matches_what_could_be_inside(directory: str, pattern: str, expected: bool) -> None:
    assert path_matches(directory, pattern) is expected


def test_a_write_that_names_no_branch_is_judged_as_one_to_the_default_branch_the_forge_names() -> None:
    from gitvow.change import DEFAULT_BRANCH_REF

    change = Change(refs=(RefChange(DEFAULT_BRANCH_REF, "", "", FAST_FORWARD),), paths=("a.txt",))
    gates = _Forge("trunk")
    decision = _decide(change, gates, {"branches": {"default_branch": False}})
    assert decision.action is Action.FORWARD and gates.asked == 1  # asked even with the rule off: the name
    decision = _decide(change, gates, {"branches": {"default_branch": False, "allowed": ["agent/**"]}})
    assert decision.reason == "branch_not_allowed" and "refs/heads/trunk" in (decision.message or "")
    decision = _decide(change, gates)
    assert decision.reason == "branch_protected"
    assert _decide(change, _Forge(None), {"branches": {"default_branch": False}}).reason == "change_unestablished"


def test_the_default_branch_in_another_case_is_still_the_default_branch() -> None:
    """A forge (or a checkout) that folds case would write ``MAIN`` into ``main``."""
    rules = compile_rules({})
    for name in ("MAIN", "Main", "main"):
        verdict = judge(push((name, FAST_FORWARD)), rules, None, "main")
        assert verdict is not None and verdict.code == "branch_protected", name
    assert judge(push(("mainline", FAST_FORWARD)), rules, None, "main") is None


def test_one_bad_command_refuses_the_whole_push() -> None:
    """Several ref updates in one push are judged together: one outside the rules refuses them all."""
    rules = compile_rules({"branches": {"allowed": ["agent/**"], "protected": ["release/*"]}})
    assert judge(push(("agent/a", FAST_FORWARD), ("agent/b", CREATED)), rules, None, "main") is None
    for bad in (("main", FAST_FORWARD), ("release/1", CREATED), ("other", CREATED)):
        verdict = judge(push(("agent/a", FAST_FORWARD), bad, ("agent/b", CREATED)), rules, None, "main")
        assert verdict is not None and verdict.code in ("branch_not_allowed", "branch_protected"), bad


def test_refs_the_command_line_does_not_name_are_refused_only_where_a_branch_rule_could_refuse_them() -> None:
    unread = Change(unread_refs="a push without a refspec")
    fenced = compile_rules({"branches": {"allowed": ["agent/**"]}})
    verdict = judge(unread, fenced, None)
    assert verdict is not None and verdict.code == "change_unestablished"
    assert judge(unread, compile_rules({"branches": {"protected": ["main"]}}), None) is not None
    assert judge(unread, compile_rules({}), None) is None  # the proxy judges the default branch from the pack
