"""Derive GitLab's quick-action inventory from its documentation, and check the table against it.

Usage:
    python scripts/derive_quick_actions.py DOC.md [DOC.md ...]            # print the inventory
    python scripts/derive_quick_actions.py --check DOC.md [DOC.md ...]    # names missing from the table

DOC.md is ``doc/user/project/quick_actions.md`` of a gitlab-org/gitlab checkout (or a mirror:
gitlabhq/gitlabhq). Several versions may be given: the inventory is their union, because a
self-managed instance still runs commands later docs removed or renamed.

How the docs are read (notes for the next person who regenerates the table):

- Every Markdown table row whose first cell holds backticked commands: `` `/name args` or
  `/alias args` `` gives ``name`` and ``alias`` (the first word after each ``/``).
- The availability columns (Issue, Merge request, Epic; Task, Objective, Key result for work
  items) are "Yes" when the cell says Yes; work items and epics count as the ``issue``
  context. The "Commit comments" (older: "Commit messages") table gives the ``commit`` context.
- Aliases that the docs mention only in prose (``/award`` "is still available as an aliased
  command") are not picked up: they are in the table by hand, and ``--check`` only reports
  names the table lacks, never the reverse.

The operation columns of ``data/quick_actions.tsv`` are a reviewed judgement, not derived.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_COMMAND = re.compile(r"`/([A-Za-z0-9_]+)")
_SECTION = re.compile(r"^#+\s+(.*)$")


def inventory(text: str) -> dict[str, set[str]]:
    """Command name → the contexts the doc says it runs in."""
    found: dict[str, set[str]] = {}
    section = ""
    header: list[str] = []
    for line in text.splitlines():
        heading = _SECTION.match(line)
        if heading:
            section = heading.group(1).lower()
            header = []
            continue
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0].lower() == "command":
            header = [cell.lower() for cell in cells]
            continue
        names = _COMMAND.findall(cells[0]) if cells else []
        if not names:
            continue
        contexts: set[str] = set()
        if "commit" in section:
            contexts.add("commit")
        for title, cell in zip(header[1:], cells[1:], strict=False):
            if "yes" not in cell.lower():
                continue
            contexts.add("merge_request" if title.startswith("merge") else "issue")
        for name in names:
            found.setdefault(name.lower(), set()).update(contexts)
    return found


def table_names(path: Path) -> set[str]:
    names: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, aliases = line.split("\t")[:2]
        names.add(name)
        if aliases != "-":
            names.update(aliases.split(","))
    return names


def main(argv: list[str]) -> int:
    check = "--check" in argv
    docs = [Path(arg) for arg in argv if arg != "--check"]
    if not docs:
        print(__doc__)
        return 2
    merged: dict[str, set[str]] = {}
    for doc in docs:
        for name, contexts in inventory(doc.read_text(encoding="utf-8")).items():
            merged.setdefault(name, set()).update(contexts)
    if check:
        table = Path(__file__).resolve().parents[1] / "src" / "gitvow_gitlab" / "data" / "quick_actions.tsv"
        missing = sorted(set(merged) - table_names(table))
        for name in missing:
            print(f"missing from quick_actions.tsv: /{name} ({', '.join(sorted(merged[name])) or 'no context'})")
        return 1 if missing else 0
    for name in sorted(merged):
        print(f"{name}\t{','.join(sorted(merged[name])) or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
