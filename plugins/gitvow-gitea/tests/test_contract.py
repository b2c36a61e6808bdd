"""The contract kit on the ``gitea`` adapter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract, Inventory
from gitvow.paths import split_path
from gitvow_gitea import GiteaAdapter
from gitvow_gitea.adapter import TRIE

DATA = Path(__file__).parent / "data" / "gitea_routes.json"
_PARAM = re.compile(r"\{([^}]+)\}")


def gitea_inventory() -> Inventory:
    """Gitea's API as gitea-js lists it; a write without a fixture is declared by the table row
    it matches (a route the table forgot matches none, and the kit fails it)."""
    routes: list[tuple[str, str]] = []
    reasons: dict[tuple[str, str], str] = {}
    for method, path, _name in json.loads(DATA.read_text())["routes"]:
        url = "https://codeberg.org/api/v1" + path
        routes.append((method, url))
        if method != "GET":
            match = TRIE.match(method, split_path(_PARAM.sub(lambda m: f"{m.group(1)}-1", path)))
            if match is not None:
                reasons[(method, url)] = f"{match.value.method} {match.value.template}: {match.value.operation}"
    return Inventory(routes=routes, reasons=reasons)


class TestGiteaContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> Adapter:
        return GiteaAdapter()

    @pytest.fixture
    def inventory(self) -> Inventory:
        return gitea_inventory()
