#!/usr/bin/env python3
"""Derive gitvow-github's committed inventories from GitHub's published descriptions.

    python scripts/derive_github_inventory.py            # npm pack the latest, rewrite data/
    python scripts/derive_github_inventory.py --check    # exit 1 if the committed lists are stale
    python scripts/derive_github_inventory.py --from DIR # use already-unpacked packages

Why a script and derived lists rather than the packages: the OpenAPI package is ~30 MB and
the schema package ~6 MB; the adapter needs a few hundred kilobytes of facts from them
(method, path template and operationId of every REST route; the name of every GraphQL
mutation). The lists are committed so a refresh is a reviewable diff, and the completeness
tests fail when upstream adds a route or mutation nobody has mapped yet.

Sources (npm): ``@octokit/openapi`` — ``generated/api.github.com.json``, ``ghec.json`` and
every ``ghes-*.json`` beside them; ``@octokit/graphql-schema`` — ``schema.graphql``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from graphql import ObjectTypeDefinitionNode, ObjectTypeExtensionNode, parse

DATA = Path(__file__).resolve().parent.parent / "src" / "gitvow_github" / "data"
ROUTES_FILE = "rest_routes.tsv"
MUTATIONS_FILE = "graphql_mutations.txt"
OPENAPI_PACKAGE = "@octokit/openapi"
SCHEMA_PACKAGE = "@octokit/graphql-schema"
METHODS = ("get", "head", "options", "post", "put", "patch", "delete")
_GHES = re.compile(r"^ghes-(\d+)\.(\d+)\.json$")


def npm_pack(package: str, workdir: Path) -> Path:
    """``npm pack`` one package into ``workdir`` and unpack it; returns the ``package/`` dir."""
    out = subprocess.run(
        ["npm", "pack", "--silent", package], cwd=workdir, check=True, capture_output=True, text=True
    ).stdout.strip().splitlines()[-1]
    target = workdir / package.replace("@", "").replace("/", "-")
    target.mkdir()
    with tarfile.open(workdir / out) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def _version(package_dir: Path) -> str:
    meta = json.loads((package_dir / "package.json").read_text())
    return f"{meta['name']}@{meta['version']}"


def _descriptions(generated: Path) -> list[tuple[str, Path]]:
    """(label, file) for api.github.com, ghec and every GHES release, dereferenced copies skipped."""
    found = [("dotcom", generated / "api.github.com.json")]
    if (generated / "ghec.json").exists():
        found.append(("ghec", generated / "ghec.json"))
    ghes = sorted(
        (p for p in generated.iterdir() if _GHES.match(p.name)),
        key=lambda p: tuple(int(x) for x in _GHES.match(p.name).groups()),  # type: ignore[union-attr]
    )
    found += [("ghes", p) for p in ghes]
    return found


def rest_routes(openapi_dir: Path) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """Every (method, path, operationId, plans) across the descriptions, and the files read."""
    rows: dict[tuple[str, str], tuple[str, set[str]]] = {}
    files: list[str] = []
    for label, path in _descriptions(openapi_dir / "generated"):
        files.append(path.name)
        spec = json.loads(path.read_text())
        for template, item in spec["paths"].items():
            for method in METHODS:
                operation = item.get(method)
                if operation is None:
                    continue
                # The first description that has the route names it: api.github.com's
                # operationId wins over an older GHES spelling of the same route.
                _, plans = rows.setdefault((method.upper(), template), (operation["operationId"], set()))
                plans.add(label)
    ordered = sorted(rows.items(), key=lambda kv: (kv[0][1], METHODS.index(kv[0][0].lower())))
    out = [(m, p, op_id, ",".join(sorted(plans))) for (m, p), (op_id, plans) in ordered]
    return files, out


def graphql_mutations(schema_dir: Path) -> list[str]:
    """Field names of the schema's ``Mutation`` type (extensions included)."""
    document = parse((schema_dir / "schema.graphql").read_text(), no_location=True)
    names: set[str] = set()
    for definition in document.definitions:
        if isinstance(definition, ObjectTypeDefinitionNode | ObjectTypeExtensionNode) and definition.name.value == "Mutation":
            names.update(field.name.value for field in definition.fields or ())
    return sorted(names)


def render_routes(version: str, files: list[str], rows: list[tuple[str, str, str, str]]) -> str:
    head = [
        "# GitHub REST routes: every operation in GitHub's OpenAPI descriptions.",
        f"# source: npm {version} generated/{{{','.join(files)}}}",
        "# derived by scripts/derive_github_inventory.py; do not edit by hand.",
        "# plans: where the route exists (dotcom = api.github.com, ghec, ghes = any GHES release).",
        "# method\tpath\toperationId\tplans",
    ]
    return "\n".join(head + ["\t".join(row) for row in rows]) + "\n"


def render_mutations(version: str, names: list[str]) -> str:
    head = [
        "# GitHub GraphQL mutations: every field of the Mutation type.",
        f"# source: npm {version} schema.graphql",
        "# derived by scripts/derive_github_inventory.py; do not edit by hand.",
    ]
    return "\n".join(head + names) + "\n"


def derive(openapi_dir: Path, schema_dir: Path) -> dict[str, str]:
    files, rows = rest_routes(openapi_dir)
    return {
        ROUTES_FILE: render_routes(_version(openapi_dir), files, rows),
        MUTATIONS_FILE: render_mutations(_version(schema_dir), graphql_mutations(schema_dir)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed lists instead of writing")
    parser.add_argument("--from", dest="source", type=Path, help="a directory holding unpacked openapi/ and graphql-schema/ packages")
    parser.add_argument("--openapi", default=OPENAPI_PACKAGE, help="npm spec for the OpenAPI package (pin with @VERSION)")
    parser.add_argument("--schema", default=SCHEMA_PACKAGE, help="npm spec for the GraphQL schema package")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-github-inventory-") as tmp:
        if args.source:
            openapi_dir, schema_dir = args.source / "openapi", args.source / "graphql-schema"
        else:
            openapi_dir, schema_dir = npm_pack(args.openapi, Path(tmp)), npm_pack(args.schema, Path(tmp))
        outputs = derive(openapi_dir, schema_dir)
    stale = []
    for name, text in outputs.items():
        target = DATA / name
        if args.check:
            if not target.exists() or target.read_text() != text:
                stale.append(name)
        else:
            target.write_text(text)
            print(f"wrote {target} ({text.count(chr(10))} lines)")
    if stale:
        print(f"stale: {', '.join(stale)}; run scripts/derive_github_inventory.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
