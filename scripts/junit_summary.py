"""Add up the JUnit XML files the tox environments wrote and print one closing line."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def counts(path: Path) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for suite in ET.parse(path).getroot().iter("testsuite"):
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skip = int(suite.get("skipped", 0))
        passed += int(suite.get("tests", 0)) - bad - skip
        failed += bad
        skipped += skip
    return passed, failed, skipped


def main(folder: str) -> int:
    files = sorted(Path(folder).glob("*.xml"))
    total = [0, 0, 0]
    for path in files:
        row = counts(path)
        print(f"  {path.stem:<20} {row[0]} passed, {row[1]} failed, {row[2]} skipped")
        total = [a + b for a, b in zip(total, row, strict=True)]
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] or not files or total[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".tox/junit"))
