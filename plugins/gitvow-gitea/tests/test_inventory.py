"""Completeness over Gitea's whole API, as its swagger description lists it.

``data/gitea_routes.json`` is derived from npm ``gitea-js`` by ``scripts/derive_routes.py``:
every (method, path, operationId) of Gitea's API v1. Each route is instantiated with sample
values and classified: every ``GET`` is ``read``; every write is either mapped to an operation
or refused *on purpose*, with a reason of its own — never by falling off the table.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gitvow.request import Request
from gitvow.vocabulary import OPERATIONS
from gitvow_gitea import GiteaAdapter
from gitvow_gitea.routes import EXTRA_ROUTES, WRITE_ROUTES

DATA = Path(__file__).parent / "data" / "gitea_routes.json"
INVENTORY: list[tuple[str, str, str]] = [(m, p, o) for m, p, o in json.loads(DATA.read_text())["routes"]]
WRITES = [r for r in INVENTORY if r[0] != "GET"]
READS = [r for r in INVENTORY if r[0] == "GET"]

# Sample values; multi-segment ones where Gitea's router takes the rest of the path.
SAMPLES = {"filepath": "docs/guide/a.md", "branch": "feature/x", "tag": "v1.0", "pageName": "Home"}
_PARAM = re.compile(r"\{([^}]+)\}")
NOT_KNOWN = "is not a known Gitea API route"


def url(path: str) -> str:
    return "https://codeberg.org/api/v1" + _PARAM.sub(lambda m: SAMPLES.get(m.group(1), f"{m.group(1)}-1"), path)


def expected_repo(path: str) -> str | None:
    """The repository a route under /repos (or a team's repository route) names."""
    if not path.startswith(("/repos/", "/teams/")):
        return None
    for owner, name in (("owner", "repo"), ("template_owner", "template_repo"), ("org", "repo")):
        if f"{{{owner}}}/{{{name}}}" in path:
            return f"{owner}-1/{name}-1"
    return None


def test_the_inventory_is_the_whole_api() -> None:
    assert json.loads(DATA.read_text())["source"] == "gitea-js@1.23.0"
    assert len(INVENTORY) == 416
    assert Counter(m for m, _, _ in INVENTORY) == {"GET": 211, "POST": 82, "DELETE": 72, "PATCH": 28, "PUT": 23}


@pytest.mark.parametrize(("method", "path", "operation_id"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_every_write_route_is_decided(gitea: GiteaAdapter, method: str, path: str, operation_id: str) -> None:
    result = gitea.classify(Request.from_url(method, url(path), body=b"{}"))
    assert len(result.operations) >= 1
    assert all(op in OPERATIONS for op in result.operations)
    if result.is_unknown:
        assert result.note and NOT_KNOWN not in result.note, f"{operation_id} fell off the table"
    repo = expected_repo(path)
    if repo is not None:
        assert result.repo == repo


@pytest.mark.parametrize(("method", "path", "operation_id"), READS, ids=[f"{m} {p}" for m, p, _ in READS])
def test_every_get_is_read(gitea: GiteaAdapter, method: str, path: str, operation_id: str) -> None:
    result = gitea.classify(Request.from_url(method, url(path)))
    assert result.operations == ("read",)
    repo = expected_repo(path)
    if repo is not None and not path.startswith("/teams/"):
        assert result.repo == repo


def test_the_table_has_no_route_gitea_does_not_have() -> None:
    """Explicit routes match the inventory exactly (a typo would leave one unreachable)."""
    listed = {(r.method, r.template) for r in WRITE_ROUTES if r.method != "*" and not r.template.endswith("**")}
    normalised = {(m, p.replace("*}", "}")) for m, p in listed}
    inventory = {(m, p) for m, p, _ in WRITES}
    assert normalised - inventory == set()
    assert not {(r.method, r.template.replace("*}", "}")) for r in EXTRA_ROUTES} & inventory


def test_figures(gitea: GiteaAdapter) -> None:
    """How Gitea's 205 write routes split (pinned, so a remapping is a visible diff)."""
    ops: Counter[str] = Counter()
    for method, path, _ in WRITES:
        result = gitea.classify(Request.from_url(method, url(path), body=b"{}"))
        ops[result.operations[0]] += 1
    assert sum(ops.values()) == 205
    assert ops == {
        "unknown": 74, "repo.admin": 26, "secret.write": 15, "issue.edit": 11, "contents.write": 8,
        "branch.protect": 7, "ref.write": 7, "issue.comment": 7, "release.write": 7, "label.manage": 6,
        "attachment.link": 6, "repo.create": 5, "pr.review": 5, "issue.relate": 4, "label.add": 4, "read": 3,
        "pr.edit": 3, "pr.merge": 2, "repo.delete": 1, "repo.fork": 1, "issue.create": 1, "pr.create": 1,
        "pr.update_branch": 1,
    }  # fmt: skip
