"""The installed plugin through the core: entry-point discovery, hosts, options, verdicts, denials."""

from __future__ import annotations

import json

import pytest

from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed, load
from gitvow.policy.load import parse_policy
from gitvow.request import Request

P = "https://gitlab.com/api/v4/projects/group%2Fproj"


def engine(policy: dict[str, object] | None = None) -> Engine:
    """A fresh discovery each time: the Engine configures adapter instances in place."""
    plugins = load()
    return Engine(parse_policy(policy or {}, relays=plugins.relays), plugins)


def decide(eng: Engine, method: str, url: str, body: bytes = b"", mode: Mode = Mode.ISSUES_PRS_MERGE,
           token: str | None = None) -> object:
    request = Request.from_url(method, url, body=body, headers={"content-type": "application/json"} if body else None)
    return eng.decide(request, Caller("agent", Grant(mode)))


def test_the_entry_point_registers_the_adapter_for_gitlab_com() -> None:
    plugins = installed()
    assert "gitlab" in plugins.adapters
    assert plugins.adapter_plugin["gitlab"] == "gitlab"
    assert not [f for f in plugins.failures if "gitlab" in str(f)]
    assert type(engine().hosts.lookup("gitlab.com")) is type(plugins.adapters["gitlab"])


#: An operator's own relay commands ([relays.NAME]): their denials name the forge tools not to use.
OPERATOR_RELAYS: dict[str, object] = {
    "operations": {"pr.create": {"relay": "hive-open-pr"}, "pr.merge": {"relay": "hive-merge"}},
    "relays": {"hive-open-pr": {"usage": "hive-open-pr --title TITLE --body-file FILE", "what": "opening a pull request"},
               "hive-merge": {"usage": "hive-merge PR_NUMBER", "what": "merging a pull request"}},
}


def test_merge_and_create_are_relayed_with_gitlab_hints() -> None:
    eng = engine(OPERATOR_RELAYS)
    for method, url in (("PUT", f"{P}/merge_requests/7/merge"), ("POST", f"{P}/merge_requests")):
        decision = decide(eng, method, url, b"{}")
        assert decision.action is Action.DENY and decision.reason == "hard_deny"  # type: ignore[attr-defined]
        assert "glab mr" in decision.message  # type: ignore[attr-defined]
        assert decision.message.endswith("reason=hard_deny")  # type: ignore[attr-defined]
    graphql = json.dumps({"query": 'mutation { mergeRequestAccept(input: {projectPath: "group/proj", iid: "7"}) { errors } }'})
    decision = decide(eng, "POST", "https://gitlab.com/api/graphql", graphql.encode())
    assert decision.reason == "hard_deny" and "mergeRequestAccept" in decision.message  # type: ignore[attr-defined]


def test_modes_gate_the_mapped_operations() -> None:
    eng = engine()
    note = (f"{P}/issues/3/notes", b'{"body": "x"}')
    assert decide(eng, "POST", *note, mode=Mode.ADVISORY).reason == "mode_denied"  # type: ignore[attr-defined]
    assert decide(eng, "POST", *note, mode=Mode.ISSUES_ONLY).action is Action.FORWARD  # type: ignore[attr-defined]
    approve = (f"{P}/merge_requests/7/approve", b"{}")
    assert decide(eng, "POST", *approve, mode=Mode.ISSUES_ONLY).reason == "mode_denied"  # type: ignore[attr-defined]
    assert decide(eng, "POST", *approve, mode=Mode.ISSUES_AND_PRS).action is Action.FORWARD  # type: ignore[attr-defined]
    labels = decide(eng, "POST", f"{P}/labels", b'{"name": "x", "color": "#fff"}')
    assert labels.action is Action.DENY and "label.manage" in labels.message  # type: ignore[attr-defined]


def test_graphql_refusals_carry_graphql_codes() -> None:
    eng = engine()
    unmapped = decide(eng, "POST", "https://gitlab.com/api/graphql", b'{"query": "mutation { destroyNote(input: {}) { errors } }"}')
    assert unmapped.reason == "graphql_mutation"  # type: ignore[attr-defined]
    unreadable = decide(eng, "POST", "https://gitlab.com/api/graphql", b"{nope")
    assert unreadable.reason == "graphql_denied"  # type: ignore[attr-defined]


def test_self_managed_host_and_adapter_options_from_the_policy() -> None:
    eng = engine({"hosts": {"git.corp.test": "gitlab"}, "adapters": {"gitlab": {"relative_url_root": "/gitlab",
                                                                                   "graphql_body_limit": 1024}}})
    decision = decide(eng, "PUT", "https://git.corp.test/gitlab/api/v4/projects/a%2Fb/merge_requests/1/merge", b"{}")
    assert decision.reason == "hard_deny"  # type: ignore[attr-defined]
    big = json.dumps({"query": "{ a }", "variables": {"x": "y" * 2000}}).encode()
    assert decide(eng, "POST", "https://git.corp.test/gitlab/api/graphql", big).reason == "graphql_denied"  # type: ignore[attr-defined]


def test_a_typo_in_the_adapter_options_names_the_key() -> None:
    with pytest.raises(PolicyError, match=r"adapters\.gitlab.*graphql_body_limt"):
        engine({"adapters": {"gitlab": {"graphql_body_limt": 5}}})


def test_credentials_are_injected_only_on_forward() -> None:
    from gitvow.gates import Context, Gates

    class Token(Gates):
        def credential(self, ctx: Context) -> str | None:
            return "glpat-secret"

    eng = engine()
    request = Request.from_url("POST", f"{P}/issues/3/notes", body=b'{"body": "x"}')
    forwarded = eng.decide(request, Caller("agent", Grant(Mode.ISSUES_ONLY)), Token())
    assert forwarded.headers == {"authorization": "Bearer glpat-secret"}
    denied = eng.decide(request, Caller("agent", Grant(Mode.ADVISORY)), Token())
    assert "glpat-secret" not in json.dumps(dict(denied.headers)) and "glpat-secret" not in (denied.message or "")
