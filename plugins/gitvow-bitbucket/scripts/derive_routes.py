#!/usr/bin/env python3
"""Derive Bitbucket's API route inventories, Cloud and Data Center, from npm ``@coderabbitai/bitbucket``.

The package ships both forges' OpenAPI descriptions as openapi-typescript declarations
(``dist/cloud/openapi/openapi-typescript.d.ts``: REST 2.0 at ``api.bitbucket.org/2.0``;
``dist/server/openapi/openapi-typescript.d.ts``: Data Center, whose paths start at ``/rest``,
``/api/latest/projects/…`` being ``/rest/api/1.0/projects/…`` on the wire). Each path is a
``readonly "/path": {`` block whose methods are ``readonly post: {…}`` or
``readonly post: operations["name"]`` (``?: never`` for a method the path has not)::

    readonly "/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/merge": {
        ...
        /** Merge a pull request */
        readonly post: {

The package is fetched with ``npm pack`` into a temporary directory (nothing is installed,
the package is never committed); the list is written one route per line, sorted, so a
regeneration shows as a readable diff. ``tests/test_inventory.py`` classifies every route and
the contract kit's completeness check requires a fixture or a declared reason for each.

    python plugins/gitvow-bitbucket/scripts/derive_routes.py [--version 1.1.4]

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

PACKAGE = "@coderabbitai/bitbucket"
DEFAULT_VERSION = "1.1.4"
OUTPUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "bitbucket_routes.json"
FILES = {
    "cloud": "package/dist/cloud/openapi/openapi-typescript.d.ts",
    "server": "package/dist/server/openapi/openapi-typescript.d.ts",
}

_PATH = re.compile(r'^    readonly "(?P<path>/[^"]*)": \{$')
_METHOD = re.compile(r"^        readonly (?P<method>get|put|post|delete|patch)\??: (?P<rest>.*)$")
_OPERATION = re.compile(r'^operations\["(?P<name>[^"]+)"\];$')
_DOC = re.compile(r"^\s*/\*\*\s*(?P<text>.*?)\s*(\*/)?$")
_DOC_LINE = re.compile(r"^\s*\*\s+(?P<text>[^@\s].*)$")


def fetch(version: str, workdir: Path) -> tuple[dict[str, str], str]:
    """``npm pack`` the package into ``workdir``; return the two declaration files and the tarball's sha256."""
    result = subprocess.run(
        ["npm", "pack", f"{PACKAGE}@{version}", "--pack-destination", str(workdir), "--silent"],
        check=True,
        capture_output=True,
        text=True,
    )
    tarball = workdir / result.stdout.strip().splitlines()[-1]
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    sources = {}
    with tarfile.open(tarball) as archive:
        for flavour, name in FILES.items():
            member = archive.extractfile(name)
            if member is None:
                raise SystemExit(f"{name} is missing from the tarball")
            sources[flavour] = member.read().decode("utf-8")
    return sources, digest


def routes(source: str) -> list[tuple[str, str, str]]:
    """``(METHOD, path, summary or operation name)`` for every method of ``interface paths``."""
    start = source.index("export interface paths {")
    end = source.index("\n}\n", start)
    found: list[tuple[str, str, str]] = []
    path = ""
    summary = ""
    in_doc = False
    for line in source[start:end].splitlines():
        head = _PATH.match(line)
        if head:
            path, summary = head["path"], ""
            continue
        doc = _DOC.match(line)
        if doc and line.lstrip().startswith("/**"):
            summary, in_doc = doc["text"], not line.rstrip().endswith("*/")
            continue
        if in_doc:
            if line.strip() == "*/":
                in_doc = False
                continue
            body = _DOC_LINE.match(line)
            if body and not summary:
                summary = body["text"]
            continue
        method = _METHOD.match(line)
        if not method or not path or method["rest"] == "never;":
            continue
        named = _OPERATION.match(method["rest"])
        label = named["name"] if named else summary
        found.append((method["method"].upper(), path, label))
        summary = ""
    if len(set((m, p) for m, p, _ in found)) != len(found):
        raise SystemExit("duplicate routes")
    return sorted(found, key=lambda r: (r[1], r[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--version", default=DEFAULT_VERSION, help=f"{PACKAGE} version (default {DEFAULT_VERSION})")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-bitbucket-npm-") as tmp:
        sources, digest = fetch(args.version, Path(tmp))
    parts = [json.dumps({"source": f"{PACKAGE}@{args.version}", "tarball_sha256": digest})[:-1]]
    for flavour, base in (("cloud", "https://api.bitbucket.org/2.0"), ("server", "/rest")):
        found = routes(sources[flavour])
        lines = ",\n".join(json.dumps(list(route)) for route in found)
        parts.append(f'"{flavour}": {{"base": {json.dumps(base)}, "routes": [\n{lines}\n]}}')
        print(f"{flavour}: {len(found)} routes")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(", ".join(parts) + "}\n")
    print(f"-> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
