"""Codex's ``apply_patch`` format, read into per-file changes.

    *** Begin Patch
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def handler():
    -    return "/v1/old"
    +    return "/v1/new"
    *** Add File: docs/x.md
    +text
    *** Delete File: old.py
    *** End Patch

A moved file is a change to both paths: the rule that protects one protects the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+)$")
MARKER = "*** Begin Patch"


@dataclass(frozen=True, slots=True)
class Change:
    op: str  # update | add | delete | move
    path: str
    old: str = ""
    new: str = ""


def parse(patch: str) -> list[Change]:
    files: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    for raw in patch.splitlines():
        line = raw.rstrip("\r")
        found = _FILE.match(line.strip())
        if found:
            current = {"op": found.group(1).lower(), "path": found.group(2).strip(), "old": [], "new": [], "to": None}
            files.append(current)
            continue
        moved = _MOVE.match(line.strip())
        if moved and current is not None:
            current["to"] = moved.group(1).strip()
            continue
        if current is None or line.startswith("***"):
            continue
        if line.startswith("+"):
            current["new"].append(line[1:])  # type: ignore[attr-defined]
        elif line.startswith("-"):
            current["old"].append(line[1:])  # type: ignore[attr-defined]
    out: list[Change] = []
    for f in files:
        old = "\n".join(f["old"])  # type: ignore[arg-type]
        new = "\n".join(f["new"])  # type: ignore[arg-type]
        out.append(Change(str(f["op"]), str(f["path"]), old, new))
        if f["to"]:
            out.append(Change("move", str(f["to"]), old, new))
    return out
