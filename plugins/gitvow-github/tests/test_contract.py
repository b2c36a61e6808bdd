"""The contract kit, run on this plugin alone (a third party does the same for theirs)."""

from __future__ import annotations

import pytest

from gitvow.contract import AdapterContract, Inventory
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.inventory import READ_METHODS, rest_operations, rest_routes


def github_inventory() -> Inventory:
    """api.github.com's REST routes as the OpenAPI description lists them; a write without a
    fixture is declared by its reviewed row in rest_operations.tsv (a route nobody mapped has
    none, and the kit fails it)."""
    reviewed = rest_operations()
    routes: list[tuple[str, str]] = []
    reasons: dict[tuple[str, str], str] = {}
    for route in rest_routes():
        if "dotcom" not in route.plans:
            continue
        url = "https://api.github.com" + route.path
        routes.append((route.method, url))
        rule = reviewed.get(route.operation_id)
        if route.method not in READ_METHODS and rule is not None:
            reasons[(route.method, url)] = f"rest_operations.tsv: {route.operation_id} → {rule.operation} {rule.reason}"
    return Inventory(routes=routes, reasons=reasons)


class TestGitHubContract(AdapterContract):
    @pytest.fixture
    def inventory(self) -> Inventory:
        return github_inventory()

    @pytest.fixture
    def adapter(self) -> GitHubAdapter:
        return GitHubAdapter()
