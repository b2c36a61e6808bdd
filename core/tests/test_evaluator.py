from __future__ import annotations

from types import MappingProxyType

import pytest

from gitvow.evaluator import Grant, evaluate
from gitvow.modes import Mode
from gitvow.request import Classification
from gitvow.verdict import Outcome


def verdict(ops: tuple[str, ...], mode: Mode, caps: frozenset[str] = frozenset(), repo: str | None = None, **kw: object):
    return evaluate(Classification(ops, repo=repo, **kw), Grant(mode, caps))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", list(Mode))
def test_relay_wins_at_every_mode(mode: Mode) -> None:
    v = verdict(("pr.merge",), mode)
    assert v.outcome is Outcome.RELAY and v.code == "hard_deny" and v.relay == "approval"


def test_mode_ladder() -> None:
    assert verdict(("issue.create",), Mode.ADVISORY).code == "mode_denied"
    assert verdict(("issue.create",), Mode.ISSUES_ONLY).allowed
    assert verdict(("git.push",), Mode.ISSUES_ONLY).code == "mode_denied"
    assert verdict(("git.push",), Mode.ISSUES_AND_PRS).allowed
    assert verdict(("pr.update_branch",), Mode.ISSUES_AND_PRS).code == "mode_denied"
    assert verdict(("pr.update_branch",), Mode.ISSUES_PRS_MERGE).allowed


def test_capability_is_an_or_grant() -> None:
    assert verdict(("issue.comment",), Mode.ADVISORY, frozenset({"converse"})).allowed
    assert verdict(("pr.review",), Mode.ADVISORY, frozenset({"converse"})).allowed
    assert not verdict(("pr.edit",), Mode.ADVISORY, frozenset({"converse"})).allowed


def test_several_operations_need_all_and_report_the_strictest() -> None:
    assert verdict(("issue.comment", "pr.review"), Mode.ADVISORY, frozenset({"converse"})).allowed
    mixed = verdict(("issue.comment", "issue.edit"), Mode.ADVISORY, frozenset({"converse"}))
    assert mixed.outcome is Outcome.DENY and mixed.operation == "issue.edit"
    strictest = verdict(("issue.edit", "pr.create", "issue.comment"), Mode.ADVISORY)
    assert strictest.outcome is Outcome.RELAY and strictest.operation == "pr.create"


def test_unknown_is_denied_at_every_mode_with_the_adapters_code() -> None:
    for mode in Mode:
        v = verdict(("unknown",), mode, frozenset({"converse"}), unknown_code="graphql_mutation", note="deleteRepository")
        assert v.code == "graphql_mutation" and "deleteRepository" in v.why


def test_mode_denial_uses_the_adapters_mode_code() -> None:
    assert verdict(("issue.create",), Mode.ADVISORY, mode_code="linear_policy").code == "linear_policy"


def test_per_repository_autonomy_overrides_the_agent_mode() -> None:
    grant = Grant(Mode.ADVISORY, autonomy=MappingProxyType({"o/trusted": Mode.ISSUES_AND_PRS}))
    assert evaluate(Classification(("git.push",), repo="O/Trusted"), grant).allowed
    assert not evaluate(Classification(("git.push",), repo="o/other"), grant).allowed
    assert not evaluate(Classification(("git.push",), repo=None), grant).allowed


def test_no_line_suggests_a_higher_mode_for_what_no_mode_allows() -> None:
    from gitvow.denial import render

    for operations in (("repo.delete",), ("unknown",)):
        verdict = evaluate(Classification(operations), Grant(Mode.ISSUES_PRS_MERGE))
        line = render(verdict)
        assert "raise this agent's mode" not in line and "no agent mode allows" in line, line
    needs = render(evaluate(Classification(("issue.create",)), Grant(Mode.ADVISORY)))
    assert "raise this agent's mode" in needs  # here a higher mode does help
