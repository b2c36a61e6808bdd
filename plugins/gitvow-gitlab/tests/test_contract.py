"""The contract kit, run on this plugin alone (tests/contract runs it over every installed adapter)."""

from __future__ import annotations

from importlib.resources import files

import pytest

from gitvow.contract import AdapterContract, Inventory
from gitvow.request import Request
from gitvow_gitlab.adapter import GitLabAdapter


def gitlab_inventory() -> Inventory:
    """GitLab's REST routes as gitbeaker calls them; a write without a fixture is declared by
    the route-table row it reaches (a route the table forgot reaches none, and the kit fails it)."""
    adapter = GitLabAdapter()
    routes: list[tuple[str, str]] = []
    reasons: dict[tuple[str, str], str] = {}
    for line in files("gitvow_gitlab").joinpath("data/rest_routes.tsv").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        method, path, _names = line.split("\t")
        url = "https://gitlab.com/api/v4" + path
        routes.append((method, url))
        if method != "GET":
            concrete = "/".join("7" if s.startswith(":") else s for s in path.split("/"))
            got = adapter.classify(Request.from_url(method, f"https://gitlab.com/api/v4{concrete}", body=b"{}",
                                                    headers={"content-type": "application/json"}))
            if "route" in got.details:
                reasons[(method, url)] = f"the table's row {got.details['route']}: {','.join(got.operations)}"
    return Inventory(routes=routes, reasons=reasons, sample={})


class TestGitLabContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> GitLabAdapter:
        return GitLabAdapter()

    @pytest.fixture
    def inventory(self) -> Inventory:
        return gitlab_inventory()
