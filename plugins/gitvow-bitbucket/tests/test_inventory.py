"""Completeness over Bitbucket's whole APIs, Cloud and Data Center, as their OpenAPI descriptions list them.

``data/bitbucket_routes.json`` is derived from npm ``@coderabbitai/bitbucket`` by
``scripts/derive_routes.py``. Each route is instantiated with sample values and classified
through the core's pipeline stage 1 (canonical path) and the adapter: every ``GET`` is
``read`` and names its repository; every write is mapped to an operation or refused on
purpose, with a reason of its own, never by falling off the table.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gitvow.pipeline import Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.request import Classification, Request
from gitvow.vocabulary import OPERATIONS
from gitvow_bitbucket import BitbucketAdapter

DATA = Path(__file__).parent / "data" / "bitbucket_routes.json"
_LOADED = json.loads(DATA.read_text())
CLOUD = [(m, p, s) for m, p, s in _LOADED["cloud"]["routes"]]
SERVER = [(m, p, s) for m, p, s in _LOADED["server"]["routes"]]
DC_HOST = "bitbucket.example.test"
_PARAM = re.compile(r"\{([^}]+)\}")
SAMPLES = {"path": "src/app.py", "name": "feature/x", "filename": "app.zip"}
NOT_KNOWN = "is not a known Bitbucket API route"

ENGINE = Engine(Policy(hosts={DC_HOST: "bitbucket"}), Plugins.of(adapters=[BitbucketAdapter()]))


def _fill(path: str) -> str:
    return _PARAM.sub(lambda m: SAMPLES.get(m.group(1), f"{m.group(1)}-1"), path)


def cloud_url(path: str) -> str:
    return "https://api.bitbucket.org/2.0" + _fill(path)


def server_url(path: str) -> str:
    # the inventory writes the API version "latest"; clients send 1.0 (both are served)
    return f"https://{DC_HOST}/rest" + _fill(path).replace("/latest/", "/1.0/", 1)


def classify(method: str, url: str) -> Classification:
    _, got = ENGINE.classify(Request.from_url(method, url, body=b"{}"))
    assert got is not None
    return got


def cloud_repo(path: str) -> str | None:
    return "workspace-1/repo_slug-1" if path.startswith("/repositories/{workspace}/{repo_slug}") else None


def server_repo(path: str) -> str | None:
    return "projectKey-1/repositorySlug-1" if "/projects/{projectKey}/repos/{repositorySlug}" in path else None


def test_the_inventories_are_the_whole_apis() -> None:
    assert _LOADED["source"] == "@coderabbitai/bitbucket@1.1.4"
    assert len(CLOUD) == 321 and len(SERVER) == 516
    assert Counter(m for m, _, _ in CLOUD) == {"GET": 172, "DELETE": 54, "POST": 49, "PUT": 46}


@pytest.mark.parametrize(("flavour", "method", "path"),
                         [("cloud", m, p) for m, p, _ in CLOUD if m != "GET"]
                         + [("server", m, p) for m, p, _ in SERVER if m != "GET"],
                         ids=lambda v: str(v))
def test_every_write_route_is_decided(flavour: str, method: str, path: str) -> None:
    url, repo = (cloud_url(path), cloud_repo(path)) if flavour == "cloud" else (server_url(path), server_repo(path))
    got = classify(method, url)
    assert got.operations and all(op in OPERATIONS for op in got.operations)
    if got.is_unknown:
        assert got.note and NOT_KNOWN not in got.note, f"{method} {path} fell off the table"
    if repo is not None:
        assert got.repo == repo, (method, path)


@pytest.mark.parametrize(("flavour", "path"),
                         [("cloud", p) for m, p, _ in CLOUD if m == "GET"]
                         + [("server", p) for m, p, _ in SERVER if m == "GET"],
                         ids=lambda v: str(v))
def test_every_get_is_a_read_naming_its_repository(flavour: str, path: str) -> None:
    url, repo = (cloud_url(path), cloud_repo(path)) if flavour == "cloud" else (server_url(path), server_repo(path))
    got = classify("GET", url)
    assert got.operations == ("read",)
    assert got.repo == repo


def test_the_tables_map_every_write_family_the_issue_names() -> None:
    ops = {classify(m, cloud_url(p)).operations[0] for m, p, _ in CLOUD if m != "GET"}
    ops |= {classify(m, server_url(p)).operations[0] for m, p, _ in SERVER if m != "GET"}
    assert {"pr.create", "pr.merge", "pr.review", "pr.edit", "issue.create", "issue.comment", "ref.write",
            "repo.admin", "repo.delete", "workflow.dispatch", "secret.write", "branch.protect"} <= ops
