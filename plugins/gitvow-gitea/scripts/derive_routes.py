#!/usr/bin/env python3
"""Derive Gitea's API route inventory — (method, path, operationId) — from npm ``gitea-js``.

``gitea-js`` is generated from Gitea's swagger description by swagger-typescript-api; each
generated method carries the swagger operation in its doc comment::

    * @name RepoMergePullRequest
    * @request POST:/repos/{owner}/{repo}/pulls/{index}/merge

The package is fetched with ``npm pack`` into a temporary directory (nothing is installed, the
package is never committed), the comments are read from ``dist/index.mjs``, and the list is
written one route per line, sorted, so a regeneration shows as a readable diff. The
completeness test in ``tests/test_inventory.py`` classifies every route.

    python plugins/gitvow-gitea/scripts/derive_routes.py [--version 1.23.0]

Needs ``npm`` on PATH and the npm registry reachable.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "gitea-js"
DEFAULT_VERSION = "1.23.0"
OUTPUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "gitea_routes.json"

# One generated method: its doc comment's @name and @request, then the camelCase method name.
_METHOD = re.compile(
    r"\*\s+@name (?P<name>\w+)\n(?:.*\n)*?\s*\*\s+@request (?P<method>[A-Z]+):(?P<path>\S+)\n(?:.*\n)*?\s*\*/\n\s*(?P<operation>\w+):",
)


def fetch(version: str, workdir: Path) -> tuple[str, str]:
    """``npm pack`` gitea-js into ``workdir``; return ``dist/index.mjs`` and the tarball's sha256."""
    result = subprocess.run(
        ["npm", "pack", f"{PACKAGE}@{version}", "--pack-destination", str(workdir), "--silent"],
        check=True,
        capture_output=True,
        text=True,
    )
    tarball = workdir / result.stdout.strip().splitlines()[-1]
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/dist/index.mjs")
        if member is None:
            raise SystemExit("package/dist/index.mjs is missing from the tarball")
        return member.read().decode("utf-8"), digest


def routes(source: str) -> list[tuple[str, str, str]]:
    found = []
    for match in _METHOD.finditer(source):
        operation = match["operation"]
        if operation[0].lower() + operation[1:] != match["name"][0].lower() + match["name"][1:]:
            raise SystemExit(f"@name {match['name']} does not belong to method {operation}")
        found.append((match["method"], match["path"], operation))
    expected = source.count("@request ")
    if len(found) != expected:
        raise SystemExit(f"read {len(found)} routes but the source has {expected} @request lines")
    if len(set(found)) != len(found):
        raise SystemExit("duplicate routes")
    return sorted(found, key=lambda r: (r[1], r[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=DEFAULT_VERSION, help=f"{PACKAGE} version (default {DEFAULT_VERSION})")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-gitea-js-") as tmp:
        source, digest = fetch(args.version, Path(tmp))
    found = routes(source)
    lines = ",\n".join(json.dumps(list(route)) for route in found)
    header = json.dumps({"source": f"{PACKAGE}@{args.version}", "tarball_sha256": digest, "base_path": "/api/v1"})
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(header[:-1] + ', "routes": [\n' + lines + "\n]}\n")
    print(f"{len(found)} routes from {PACKAGE}@{args.version} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
