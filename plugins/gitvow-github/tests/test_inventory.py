"""Completeness over 100% of the committed inventories.

Every REST route of ``rest_routes.tsv`` and every mutation of ``graphql_mutations.txt`` is
classified here through the adapter, from a concrete request built from its template, and
must come out as its reviewed row says. A refresh of the derived files that brings a route
or mutation without a row fails ``test_every_write_route_has_a_row`` /
``test_every_mutation_has_a_row`` until someone maps it.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from gitvow.request import Request
from gitvow.vocabulary import OPERATIONS, READ, UNKNOWN
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.fixtures import gql
from gitvow_github.inventory import (
    READ_METHODS,
    InventoryError,
    Route,
    graphql_mutations,
    graphql_operations,
    rest_operation,
    rest_operations,
    rest_routes,
    source_header,
)
from gitvow_github.routes import TAIL_PARAMS, RestRoutes

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "derive_github_inventory.py"

#: Concrete values for path parameters; the tail ones carry slashes on purpose.
SAMPLES = {"owner": "octo", "repo": "app", "template_owner": "octo", "template_repo": "app",
           "path": "docs/guide/intro.md", "ref": "heads/feature/nested", "branch": "release/2.x",
           "basehead": "main...feature/x", "dir": "docs/sub", "tag": "v1.0"}


def concrete(template: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return SAMPLES.get(name, f"x-{name.replace('_', '-')}")

    return re.sub(r"\{([^}]+)\}", value, template)


def expected_repo(route: Route) -> str | None:
    names = re.findall(r"\{([^}]+)\}", route.path)
    if ("owner" in names and "repo" in names) or ("template_owner" in names and "template_repo" in names):
        return "octo/app"
    return None


def test_inventories_record_their_source() -> None:
    assert re.match(r"npm @octokit/openapi@\d+\.\d+\.\d+ ", source_header("rest_routes.tsv"))
    assert re.match(r"npm @octokit/graphql-schema@\d+\.\d+\.\d+ ", source_header("graphql_mutations.txt"))
    assert len(rest_routes()) > 1000 and len(graphql_mutations()) > 200


def test_every_write_route_has_a_row() -> None:
    missing = sorted(f"{r.method} {r.path} ({r.operation_id})" for r in rest_routes()
                     if r.method not in READ_METHODS and r.operation_id not in rest_operations())
    assert missing == [], "unmapped REST routes; add rows to rest_operations.tsv:\n" + "\n".join(missing)


def test_no_stale_rest_rows() -> None:
    writes = {r.operation_id for r in rest_routes() if r.method not in READ_METHODS}
    assert sorted(set(rest_operations()) - writes) == []


def test_every_mutation_has_a_row() -> None:
    missing = sorted(set(graphql_mutations()) - set(graphql_operations()))
    assert missing == [], "unmapped mutations; add rows to graphql_operations.tsv: " + ", ".join(missing)


def test_no_stale_mutation_rows() -> None:
    assert sorted(set(graphql_operations()) - set(graphql_mutations())) == []


def test_rows_name_vocabulary_operations_and_unknowns_say_why() -> None:
    for rows in (rest_operations(), graphql_operations()):
        for key, rule in rows.items():
            assert rule.operation in OPERATIONS, key
            if rule.operation == UNKNOWN:
                assert rule.reason.strip(), key


@pytest.mark.parametrize("prefix", ["https://api.github.com", "https://ghe.example.test/api/v3"])
def test_every_rest_route_classifies_as_its_row(adapter: GitHubAdapter, prefix: str) -> None:
    """All routes, through the adapter, on github.com's API host and on a GHES host."""
    problems = []
    for route in rest_routes():
        host = "https://uploads.github.com" if route.operation_id == "repos/upload-release-asset" and "api.github" in prefix else prefix
        request = Request.from_url(route.method, host + concrete(route.path), body=b"{}")
        got = adapter.classify(request)
        want = READ if route.method in READ_METHODS else rest_operation(route).operation
        if got.operations[1:] and got.change is not None and set(got.operations[1:]) <= set(got.change.operations()):
            got = replace(got, operations=got.operations[:1])  # what the write does to a ref (ref.delete) joins
        if got.operations != (want,):
            problems.append(f"{route.method} {route.path}: {got.operations}, expected {want} ({got.note})")
        elif got.repo != expected_repo(route):
            problems.append(f"{route.method} {route.path}: repo {got.repo!r}, expected {expected_repo(route)!r}")
        elif want == UNKNOWN and not got.note:
            problems.append(f"{route.method} {route.path}: unknown without a note")
    assert problems == []


def test_writes_match_their_own_route(adapter: GitHubAdapter) -> None:
    """The trie finds each write route itself, not a look-alike with the same operation."""
    wrong = []
    for route in rest_routes():
        if route.method in READ_METHODS:
            continue
        got = adapter.classify(Request.from_url(route.method, "https://api.github.com" + concrete(route.path)))
        spelled = got.details.get("route")
        if spelled != f"{route.method} {route.path}" and "..." not in route.path:
            wrong.append(f"{route.method} {route.path} matched {spelled}")
    assert wrong == []


def test_every_mutation_classifies_as_its_row(adapter: GitHubAdapter) -> None:
    problems = []
    for name in graphql_mutations():
        body = gql(f"mutation {{ {name}(input: {{}}) {{ __typename }} }}")
        got = adapter.classify(Request.from_url("POST", "https://api.github.com/graphql", body=body))
        want = graphql_operations()[name].operation
        if got.operations[1:] and got.change is not None and set(got.operations[1:]) <= set(got.change.operations()):
            got = replace(got, operations=got.operations[:1])  # what the write does to a ref (ref.delete) joins
        if got.operations != (want,):
            problems.append(f"{name}: {got.operations}, expected {want}")
        if got.unknown_code != "graphql_mutation" or got.mode_code != "graphql_mutation":
            problems.append(f"{name}: codes {got.unknown_code}/{got.mode_code}")
        if want == UNKNOWN and name not in got.note:
            problems.append(f"{name}: unknown note does not name it: {got.note}")
    assert problems == []


def test_a_route_without_a_row_is_unknown() -> None:
    """What a refresh brings before anyone maps it: denied, naming the operationId."""
    fresh = Route("POST", "/repos/{owner}/{repo}/teleport", "repos/teleport", ("dotcom",))
    trie = RestRoutes([*rest_routes(), fresh])
    match = trie.match("POST", "/repos/octo/app/teleport")
    assert match is not None
    assert (match.endpoint.operation, match.repo) == (UNKNOWN, "octo/app")
    assert "repos/teleport is not mapped yet" in match.endpoint.reason


def test_tail_parameters_are_the_ones_the_inventory_uses() -> None:
    used = {name for r in rest_routes() for name in re.findall(r"\{([^}]+)\}", r.path)}
    assert used >= TAIL_PARAMS


# -- the derivation script, run for real on small stand-in packages ---------------------


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("derive_github_inventory", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package(root: Path, name: str, version: str) -> Path:
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": name, "version": version}))
    return root


def test_derivation_script(tmp_path: Path) -> None:
    openapi = _package(tmp_path / "openapi", "@octokit/openapi", "9.9.9")
    (openapi / "generated").mkdir()
    (openapi / "generated" / "api.github.com.json").write_text(json.dumps({"paths": {
        "/repos/{owner}/{repo}/pulls": {"get": {"operationId": "pulls/list"}, "post": {"operationId": "pulls/create"}},
        "/": {"get": {"operationId": "meta/root"}},
    }}))
    (openapi / "generated" / "ghes-3.9.json").write_text(json.dumps({"paths": {
        "/admin/users": {"post": {"operationId": "enterprise-admin/create-user"}},
        "/": {"get": {"operationId": "meta/root"}},
    }}))
    (openapi / "generated" / "ghes-3.9.deref.json").write_text("not read")
    schema = _package(tmp_path / "graphql-schema", "@octokit/graphql-schema", "1.2.3")
    (schema / "schema.graphql").write_text(
        "type Query { a: Int }\ntype Mutation { zeta(x: Int): Int\n alpha: Int }\nextend type Mutation { beta: Int }\n"
    )
    out = _script().derive(openapi, schema)
    routes = out["rest_routes.tsv"].splitlines()
    assert "# source: npm @octokit/openapi@9.9.9 generated/{api.github.com.json,ghes-3.9.json}" in routes
    assert [line for line in routes if not line.startswith("#")] == [
        "GET\t/\tmeta/root\tdotcom,ghes",
        "POST\t/admin/users\tenterprise-admin/create-user\tghes",
        "GET\t/repos/{owner}/{repo}/pulls\tpulls/list\tdotcom",
        "POST\t/repos/{owner}/{repo}/pulls\tpulls/create\tdotcom",
    ]
    mutations = out["graphql_mutations.txt"].splitlines()
    assert "# source: npm @octokit/graphql-schema@1.2.3 schema.graphql" in mutations
    assert [line for line in mutations if not line.startswith("#")] == ["alpha", "beta", "zeta"]


def test_inventory_errors_name_file_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from gitvow_github import inventory

    monkeypatch.setattr(inventory, "_lines", lambda name: iter([(7, "some/op\tpr.explode")]))
    with pytest.raises(InventoryError, match=r"x.tsv:7: 'pr.explode' is not an operation"):
        inventory._mapping("x.tsv")
    monkeypatch.setattr(inventory, "_lines", lambda name: iter([(3, "some/op\tunknown")]))
    with pytest.raises(InventoryError, match=r"x.tsv:3: an unknown row must say why"):
        inventory._mapping("x.tsv")
