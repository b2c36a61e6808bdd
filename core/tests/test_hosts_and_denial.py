from __future__ import annotations

import pytest

from gitvow.adapters.inference import InferenceAdapter
from gitvow.denial import render
from gitvow.errors import PolicyError
from gitvow.hosts import HostRegistry
from gitvow.relay import APPROVAL, RelayTemplate
from gitvow.verdict import Outcome, Verdict


def test_host_port_beats_bare_host_and_configured_hosts_add_to_defaults() -> None:
    adapter = InferenceAdapter()

    class Other(InferenceAdapter):
        name = "other"  # type: ignore[misc]
        default_hosts = ()

    other = Other()
    registry = HostRegistry({"inference": adapter, "other": other}, {"models.test:8443": "other", "Models.Test": "inference"})
    assert registry.lookup("models.test", 8443) is other
    assert registry.lookup("MODELS.test", 443) is adapter
    assert registry.lookup("api.githubcopilot.com", 443) is adapter
    assert registry.lookup("nowhere.test", 443) is None
    assert registry.intercepts("api.githubcopilot.com") and not registry.intercepts("nowhere.test")


def test_a_host_mapped_to_a_missing_adapter_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match=r"p\.toml: hosts\.'x\.test': adapter 'gitlab' is not installed; expected one of: inference"):
        HostRegistry({"inference": InferenceAdapter()}, {"x.test": "gitlab"}, source="p.toml")


MERGE = RelayTemplate("hive-merge", "hive-merge PR_NUMBER", "merging a pull request")  # an operator's [relays.NAME]


def test_relay_line_uses_the_shared_template_and_adapter_hints() -> None:
    verdict = Verdict(Outcome.RELAY, code="hard_deny", operation="pr.merge", relay="hive-merge")
    line = render(verdict, target="PUT /repos/o/r/pulls/1/merge", repo="o/r", relays={"hive-merge": MERGE}, hints=("gh pr merge", "MCP merge_pull_request"))
    assert line == (
        "gitvow refused pr.merge on o/r (PUT /repos/o/r/pulls/1/merge): merging a pull request is done by a "
        "human-sanctioned relay, not by agents directly; use `hive-merge PR_NUMBER`; do not use gh pr merge, "
        "MCP merge_pull_request. reason=hard_deny"
    )


def test_approval_line_names_the_id_and_how_to_wait() -> None:
    verdict = Verdict(Outcome.RELAY, code="hard_deny", operation="pr.create", relay="approval")
    relays = {"approval": APPROVAL}
    line = render(verdict, target="POST /repos/o/r/pulls", repo="o/r", relays=relays, hints=("gh pr create",), approval="7K3F")
    assert line == (
        "gitvow refused pr.create on o/r (POST /repos/o/r/pulls): pr.create needs a human's approval; staged for a "
        "human as approval 7K3F; it is sent once approved: `gitvow approvals wait 7K3F` (or send the same request "
        "again for its result). reason=hard_deny"
    )
    unstaged = render(verdict, target="gh pr create", repo="o/r", relays=relays)
    assert "needs a human's approval; send it through the gitvow proxy" in unstaged
    assert "approval id" in unstaged and unstaged.endswith("reason=hard_deny")


def test_denial_is_one_line_even_when_parts_carry_newlines() -> None:
    verdict = Verdict.deny("mode_denied", "needs\nmode", operation="issue.create")
    line = render(verdict, target="POST /x\r\n")
    assert "\n" not in line and "\r" not in line and line.endswith("reason=mode_denied")


def test_an_allowed_verdict_has_no_denial_line() -> None:
    with pytest.raises(ValueError, match="no denial line"):
        render(Verdict.allow())
