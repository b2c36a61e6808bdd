"""Refusals as Linear's GraphQL errors: the SDK shows ``userPresentableMessage``."""

from __future__ import annotations

import json

from gitvow.request import Request
from gitvow_linear.adapter import LinearAdapter

LINE = "gitvow refused issue.create (POST /graphql): no. reason=linear_policy"


def test_graphql_errors_with_a_presentable_message() -> None:
    kind, body = LinearAdapter().refusal_body(Request.from_url("POST", "https://api.linear.app/graphql"), LINE,
                                              "linear_policy")
    (error,) = json.loads(body)["errors"]
    assert kind.startswith("application/json") and error["message"] == LINE
    assert error["extensions"]["userPresentableMessage"] == LINE and error["extensions"]["gitvow_reason"] == "linear_policy"
