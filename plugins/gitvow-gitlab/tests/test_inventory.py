"""Completeness over GitLab's REST inventory (derived from npm @gitbeaker/core by scripts/).

Every write route a real client is known to send must hit a row of the route table: an
operation, or ``unknown`` with a stated reason. Only routes outside the inventory may fall
through to the generic "no route" refusal. Every read route is ``read``.
"""

from __future__ import annotations

from importlib.resources import files

import pytest

from gitvow.request import Request
from gitvow.vocabulary import OPERATIONS, UNKNOWN
from gitvow_gitlab.adapter import GitLabAdapter
from gitvow_gitlab.routes import REASONS, ROUTES

PROJECT = "group%2Fsub%2Fproj"


def inventory() -> list[tuple[str, str, str]]:
    text = files("gitvow_gitlab").joinpath("data/rest_routes.tsv").read_text()
    rows = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        method, path, names = line.split("\t")
        rows.append((method, path, names))
    return rows


ROWS = inventory()
WRITES = [r for r in ROWS if r[0] != "GET"]


def concrete(template: str) -> tuple[str, bool]:
    """A URL path for a template: the project parameter gets an encoded full path, others ``7``."""
    out = []
    names_project = False
    segments = template.strip("/").split("/")
    for i, segment in enumerate(segments):
        if segment.startswith(":"):
            if i == 1 and segments[0] == "projects":
                out.append(PROJECT)
                names_project = True
            else:
                out.append("7")
        else:
            out.append(segment)
    return "/api/v4/" + "/".join(out), names_project


def test_inventory_is_whole() -> None:
    """Guards against a truncated or mis-derived list: gitbeaker 43.8 calls ~500 write routes."""
    assert len(ROWS) > 1000
    assert len(WRITES) > 500
    assert {m for m, _, _ in ROWS} == {"GET", "POST", "PUT", "PATCH", "DELETE"}
    assert ("PUT", "/projects/:projectId/merge_requests/:mergerequestIId/merge") in {(m, p) for m, p, _ in ROWS}


@pytest.mark.parametrize(("method", "template", "names"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_every_inventoried_write_is_mapped(method: str, template: str, names: str) -> None:
    path, names_project = concrete(template)
    got = GitLabAdapter().classify(Request.from_url(method, f"https://gitlab.com{path}", body=b"{}",
                                                    headers={"content-type": "application/json"}))
    assert "route" in got.details, f"{names}: no route row for {method} {template} ({got.note})"
    assert all(op in OPERATIONS for op in got.operations)
    if UNKNOWN in got.operations:
        assert got.note in REASONS.values(), f"{method} {template}: unknown without a stated reason"
    if names_project:
        assert got.repo == "group/sub/proj"


def test_every_inventoried_read_is_read() -> None:
    adapter = GitLabAdapter()
    for method, template, _ in ROWS:
        if method == "GET":
            path, _ = concrete(template)
            assert adapter.classify(Request.from_url("GET", f"https://gitlab.com{path}")).operations == ("read",), template


def test_the_table_maps_every_operation_the_adapter_claims() -> None:
    """The route table alone reaches every REST-expressible operation (none is fixture-only)."""
    reached = {op for _, _, route in ROUTES.templates() for op in route.operations}
    reached |= {"pr.edit", "issue.edit", "label.add", "pr.review", "issue.comment"}  # via resolvers
    expected = set(OPERATIONS) - {"agent.session", "auth.login", "git.fetch", "git.push", "ref.force"}  # force: git only
    assert expected <= reached
