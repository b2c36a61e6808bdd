#!/usr/bin/env python3
"""Derive GitLab's REST route inventory from the public npm package ``@gitbeaker/core``.

gitbeaker's ``map.json`` lists every resource method it implements; ``gitbeaker_routes.mjs``
calls each one against a recording requester, so the routes come from the client's own code
rather than from regexes over its source. This script installs the package into a scratch
directory, runs the recorder, normalises the paths to templates (``/projects/:projectId/...``)
and writes ``src/gitvow_gitlab/data/rest_routes.tsv``: method, path template, gitbeaker
method names. The package itself is never committed.

    python plugins/gitvow-gitlab/scripts/derive_inventory.py [--version 43.8.0]

Needs ``node`` (>= 18) and ``npm``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "src" / "gitvow_gitlab" / "data" / "rest_routes.tsv"
PLACEHOLDER = re.compile(r"ZZ(\w+?)ZZ")


def template(prefix: str, path: str) -> str:
    """``projects`` + ``ZZprojectIdZZ/issues?x=1`` → ``/projects/:projectId/issues``."""
    path = path.split("?", 1)[0].strip("/")
    full = f"{prefix.strip('/')}/{path}" if prefix.strip("/") else path
    return "/" + PLACEHOLDER.sub(lambda m: f":{m.group(1)}", full).strip("/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="43.8.0", help="@gitbeaker/core version (default %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if not shutil.which("node") or not shutil.which("npm"):
        print("derive_inventory: node and npm are needed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gitbeaker-") as tmp:
        work = Path(tmp)
        (work / "package.json").write_text('{"private": true, "type": "module"}\n')
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", f"@gitbeaker/core@{args.version}"],
            cwd=work, check=True,
        )
        shutil.copy(HERE / "gitbeaker_routes.mjs", work / "gitbeaker_routes.mjs")
        run = subprocess.run(
            ["node", "--no-deprecation", "gitbeaker_routes.mjs"], cwd=work, check=True, capture_output=True, text=True
        )
        sys.stderr.write(run.stderr)
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for line in run.stdout.splitlines():
        row = json.loads(line)
        names[(row["method"], template(row["prefix"], row["path"]))].add(row["name"])
    rows = sorted(names.items(), key=lambda item: (item[0][1], item[0][0]))
    with args.out.open("w") as out:
        out.write(f"# GitLab REST v4 routes called by @gitbeaker/core {args.version}; derived by scripts/derive_inventory.py\n")
        out.write("# method\tpath (under /api/v4)\tgitbeaker methods\n")
        for (method, path), methods in rows:
            out.write(f"{method}\t{path}\t{' '.join(sorted(methods))}\n")
    writes = sum(1 for (method, _), _ in rows if method != "GET")
    print(f"wrote {len(rows)} routes ({writes} writes) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
