"""The ``linear`` plugin as a user installs it: found through its entry point, run by the engine."""

from __future__ import annotations

import tomllib

from gitvow import denial
from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context, Gates
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import load
from gitvow.policy.load import parse_policy
from gitvow.request import Request
from gitvow_linear import LinearAdapter
from gitvow_linear.fixtures import URL, gql

SECRET = "lin_api_not-a-real-key"


class KeyGate(Gates):
    def credential(self, ctx: Context) -> str | None:
        return SECRET


def engine(text: str = "") -> Engine:
    # A fresh load: installed() is shared per process, and options configure its adapters in place.
    plugins = load()
    return Engine(parse_policy(tomllib.loads(text), relays=plugins.relays), plugins)


def post(query: str) -> Request:
    return Request.from_url("POST", URL, headers={"content-type": "application/json"}, body=gql(query))


def test_the_entry_point_registers_the_adapter_for_api_linear_app() -> None:
    eng = engine()
    assert isinstance(eng.plugins.adapters["linear"], LinearAdapter)
    assert eng.plugins.adapter_plugin["linear"] == "linear"
    assert eng.hosts.lookup("api.linear.app") is eng.plugins.adapters["linear"]


def test_an_allowed_mutation_is_forwarded_with_the_key() -> None:
    decision = engine().decide(post('mutation { commentCreate(input: {issueId: "i", body: "x"}) { success } }'),
                               Caller("agent", Grant(Mode.ISSUES_ONLY)), KeyGate())
    assert decision.action is Action.FORWARD
    assert decision.headers == {"authorization": SECRET}


def test_a_refused_mutation_gets_one_line_with_linear_policy() -> None:
    decision = engine().decide(post('mutation { teamDelete(id: "t") { success } }'),
                               Caller("agent", Grant(Mode.ISSUES_PRS_MERGE)), KeyGate())
    assert decision.action is Action.DENY
    assert decision.headers[denial.REASON_HEADER] == "linear_policy"
    assert decision.message is not None
    assert decision.message.endswith("reason=linear_policy")
    assert "teamDelete" in decision.message
    assert SECRET not in decision.message


def test_options_from_the_policy_file_reach_the_adapter() -> None:
    eng = engine("[adapters.linear]\nbody_limit = 2048\nfield_limit = 2\n")
    adapter = eng.adapters["linear"]
    assert isinstance(adapter, LinearAdapter)
    assert (adapter.body_limit, adapter.field_limit) == (2048, 2)
    decision = eng.decide(post("query { a: viewer { id } b: viewer { id } c: viewer { id } }"),
                          Caller("agent", Grant(Mode.ISSUES_PRS_MERGE)))
    assert decision.reason == "linear_policy"
    assert decision.classification is not None and decision.classification.note == "more than 2 top-level fields"
