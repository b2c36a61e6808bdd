#!/usr/bin/env python3
"""Derive the GraphQL documents the official Linear SDK sends, for the classification tests.

The SDK (npm ``@linear/sdk``) is generated from Linear's schema: every query and mutation it can
send is a ``TypedDocumentString`` in its ``LinearDocument`` namespace, each carrying the
fragment definitions it spreads. Classifying every one of them is the acceptance test of the
``linear`` adapter, so the list is derived from the published package rather than written by
hand.

The package is fetched with ``npm pack`` into a temporary directory (nothing is installed, the
package is never committed) and read with ``node``. The output keeps each fragment once, since
most documents repeat the same few hundred fragments; the script checks that every document
reassembles byte for byte from the compact form before writing it.

    python plugins/gitvow-linear/scripts/derive_sdk_documents.py [--version 98.0.0]

Needs ``npm`` and ``node`` (>= 20) on PATH and the npm registry reachable.
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

PACKAGE = "@linear/sdk"
DEFAULT_VERSION = "98.0.0"
OUTPUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "linear_sdk_documents.json"

# Prints {name: text} for every generated operation document (fragments are inlined in them).
_NODE = """
import(process.argv[1]).then((sdk) => {
  const docs = sdk.LinearDocument;
  const out = {};
  for (const [name, value] of Object.entries(docs)) {
    if (value instanceof docs.TypedDocumentString && !name.endsWith("FragmentDoc")) {
      out[name] = value.toString();
    }
  }
  process.stdout.write(JSON.stringify(out));
});
"""

_FRAGMENT = re.compile(r"(?m)^[ ]*fragment (\w+) on ")
_SEPARATOR = "    "  # codegen indents the first fragment definition by four spaces


def fetch(version: str, workdir: Path) -> tuple[Path, str]:
    """``npm pack`` the SDK into ``workdir``; return the unpacked package and the tarball's sha256."""
    spec = f"{PACKAGE}@{version}"
    result = subprocess.run(
        ["npm", "pack", spec, "--pack-destination", str(workdir), "--silent"],
        check=True,
        capture_output=True,
        text=True,
    )
    tarball = workdir / result.stdout.strip().splitlines()[-1]
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    with tarfile.open(tarball) as archive:
        archive.extractall(workdir, filter="data")
    return workdir / "package", digest


def read_documents(package: Path) -> dict[str, str]:
    entry = package / "dist" / "index.mjs"
    out = subprocess.run(
        ["node", "--input-type=module", "-e", _NODE, entry.as_uri()],
        check=True,
        capture_output=True,
        text=True,
    )
    documents: dict[str, str] = json.loads(out.stdout)
    return documents


def split(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A document's operation text and its fragment definitions, in order."""
    matches = list(_FRAGMENT.finditer(text))
    if not matches:
        return text, []
    head = text[: matches[0].start()]
    fragments = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        fragments.append((match.group(1), text[match.start() : end].strip(" \n")))
    return head, fragments


def assemble(operation: str, names: list[str], fragments: dict[str, str]) -> str:
    """The inverse of :func:`split`: the document text exactly as the SDK sends it."""
    if not names:
        return operation
    return operation + _SEPARATOR + "\n".join(fragments[name] for name in names)


def compact(documents: dict[str, str]) -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    fragments: dict[str, str] = {}
    compacted: dict[str, dict[str, object]] = {}
    for name, text in sorted(documents.items()):
        operation, parts = split(text)
        for fragment, definition in parts:
            if fragments.setdefault(fragment, definition) != definition:
                raise SystemExit(f"fragment {fragment} differs between documents; cannot share it")
        names = [fragment for fragment, _ in parts]
        if assemble(operation, names, fragments) != text:
            raise SystemExit(f"{name} does not reassemble from its parts")
        compacted[name] = {"operation": operation, "fragments": names}
    return fragments, compacted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=DEFAULT_VERSION, help=f"{PACKAGE} version (default {DEFAULT_VERSION})")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitvow-linear-sdk-") as tmp:
        package, digest = fetch(args.version, Path(tmp))
        documents = read_documents(package)
    fragments, compacted = compact(documents)
    payload = {
        "source": f"{PACKAGE}@{args.version}",
        "tarball_sha256": digest,
        "assembly": "operation + '    ' + '\\n'.join(fragments[name] for name in document['fragments']), or the operation alone",
        "fragments": fragments,
        "documents": compacted,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=0, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{len(compacted)} documents, {len(fragments)} fragments from {PACKAGE}@{args.version} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
