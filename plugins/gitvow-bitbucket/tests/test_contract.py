"""The contract kit on the ``bitbucket`` adapter, with both forge inventories supplied."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract, Inventory
from gitvow.paths import split_path
from gitvow_bitbucket import BitbucketAdapter
from gitvow_bitbucket.routes import CLOUD, SERVER

DATA = Path(__file__).parent / "data" / "bitbucket_routes.json"
DC_HOST = "bitbucket.example.test"
_PARAM = re.compile(r"\{([^}]+)\}")


def _sample(path: str) -> list[str]:
    return split_path(_PARAM.sub(lambda m: f"{m.group(1)}-1", path))


def inventory_of_both() -> Inventory:
    """Every route of both APIs; a write without a fixture is declared by the table row it
    matches (a route the table forgot matches none, and the kit fails it)."""
    loaded = json.loads(DATA.read_text())
    routes: list[tuple[str, str]] = []
    reasons: dict[tuple[str, str], str] = {}
    for flavour, table, base in (("cloud", CLOUD, "https://api.bitbucket.org/2.0"),
                                 ("server", SERVER, f"https://{DC_HOST}/rest")):
        for method, path, _summary in loaded[flavour]["routes"]:
            url = base + (path.replace("/latest/", "/1.0/", 1) if flavour == "server" else path)
            routes.append((method, url))
            if method == "GET":
                continue
            match = table.match(method, _sample(path))
            if match is not None:
                row = match.value
                reasons[(method, url)] = f"{row.method} {row.template}: {','.join(row.operations)} {row.why}".strip()
    return Inventory(routes=routes, reasons=reasons)


class TestBitbucketContract(AdapterContract):
    @pytest.fixture
    def inventory(self) -> Inventory:
        return inventory_of_both()

    @pytest.fixture
    def adapter(self) -> Adapter:
        return BitbucketAdapter()
