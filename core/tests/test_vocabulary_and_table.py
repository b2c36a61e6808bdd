from __future__ import annotations

import pytest

from gitvow.errors import PolicyError
from gitvow.modes import Mode
from gitvow.policy.table import DEFAULT_TABLE, PolicyRow, PolicyTable
from gitvow.vocabulary import OPERATIONS, get, writes

SEED_OPERATIONS = [
    "read", "auth.login", "git.fetch", "git.push", "ref.write", "branch.protect", "issue.create", "issue.edit",
    "issue.comment", "label.add", "issue.relate", "pr.create", "pr.edit", "pr.review", "pr.update_branch",
    "pr.merge", "agent.session", "attachment.link", "inference.call", "unknown",
]

# Seed 003, "Default policy" column.
SEED_DEFAULTS = {
    "read": "advisory", "auth.login": "advisory", "git.fetch": "advisory", "git.push": "issues_and_prs",
    "ref.write": "issues_and_prs", "branch.protect": "issues_and_prs", "issue.create": "issues_only",
    "issue.edit": "issues_only", "issue.comment": "issues_only or converse", "label.add": "issues_only",
    "issue.relate": "issues_only", "pr.create": "relay(approval)", "pr.edit": "issues_and_prs",
    "pr.review": "issues_and_prs or converse", "pr.update_branch": "issues_prs_merge",
    "pr.merge": "relay(approval)", "agent.session": "advisory or converse", "attachment.link": "issues_and_prs",
    "inference.call": "advisory", "unknown": "deny",
}


def test_vocabulary_holds_every_seed_operation_with_a_description() -> None:
    for name in SEED_OPERATIONS:
        assert get(name).description
    assert all(op.description.endswith(".") for op in OPERATIONS.values())


def test_reads_do_not_write_and_writes_do() -> None:
    assert not writes("read") and not writes("git.fetch") and not writes("auth.login")
    assert writes("git.push") and writes("pr.merge") and writes("no.such.op")


def test_default_table_is_the_seed_column() -> None:
    assert {name: DEFAULT_TABLE[name].describe() for name in SEED_OPERATIONS} == SEED_DEFAULTS


def test_added_dangerous_operations_are_denied_by_default() -> None:
    added = set(OPERATIONS) - set(SEED_OPERATIONS)
    assert added >= {"repo.delete", "gist.write", "repo.fork", "workflow.dispatch", "secret.write"}
    assert all(DEFAULT_TABLE[name].deny for name in added)


def test_operator_row_overrides_and_missing_rows_keep_the_default() -> None:
    table = PolicyTable({"pr.merge": PolicyRow(min_mode=Mode.ISSUES_PRS_MERGE)})
    assert table["pr.merge"].relay is None and table["pr.merge"].min_mode is Mode.ISSUES_PRS_MERGE
    assert table["pr.create"].relay == "approval"


def test_unknown_operation_in_a_table_is_a_load_error_naming_it() -> None:
    with pytest.raises(PolicyError, match=r"operations\.'pr\.mrge'.*unknown operation 'pr\.mrge'"):
        PolicyTable({"pr.mrge": PolicyRow()}, source="p.toml")


def test_unknown_cannot_be_relaxed() -> None:
    with pytest.raises(PolicyError, match="always denied"):
        PolicyTable({"unknown": PolicyRow()})
