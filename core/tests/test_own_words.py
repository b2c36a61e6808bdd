"""The repository explains itself: no text points at documents that live outside it.

Code, tests and docs say what they mean in their own words and, where a reference helps, point
at our docs (the pipeline in docs/architecture.md, the default table in docs/policy.md, the
provider protocol in docs/gate.md, the adapter testing contract in docs/writing-a-plugin.md).
A pointer to a requirements document the reader cannot open ("seed 003", "the seed's rows",
"question 2") or to another project's names and issue numbers fails here. Seeds in their
ordinary sense (a random seed, a fuzzer's seed inputs) are fine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCOPE = ("core", "enforcement", "plugins", "tests", "docs", "benchmarks", "examples", "scripts", "README.md", "tox.ini",
         "pyproject.toml")

#: Each pattern is a pointer outside the repository, matched case-insensitively on word bounds.
POINTERS = re.compile(
    "|".join((
        r"\bseed[\s_-]*0*\d{1,3}\b",            # a numbered requirements document
        r"\bthe\s+seed(?:'s)?\b(?!\s+(?:of|for|inputs?|value))",  # "the seed", "the seed's list"
        r"\bseed's\b",
        r"\bquestion\s+\d+\b(?!\.\d)",          # a numbered open question of such a document
        r"\bhive\b",                            # another project's names
        r"\bx-hive-",
        r"\bcrux\b",
        r"(?<![\w&/])#1\d{4}\b",                # another project's issue numbers
    )),
    re.IGNORECASE,
)


def pointers(text: str) -> list[str]:
    """Every pointer outside the repository in ``text``, as written."""
    return [match.group(0) for match in POINTERS.finditer(text)]


def tracked_text_files() -> list[Path]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    listed = subprocess.run([git, "ls-files", "-z", "--", *SCOPE], cwd=ROOT, capture_output=True, check=True)
    files = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or path == Path(__file__).resolve() or not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" not in head:
            files.append(path)
    return files


def test_no_tracked_text_points_outside_the_repository() -> None:
    files = tracked_text_files()
    assert len(files) > 100, "the listing found too few files to mean anything"
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {hit!r}" for hit in pointers(line)]
    assert found == [], "say it in our own words (or point at docs/):\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    "The pipeline of seed 003, in its order.",
    "providers (Seed 000), for edits",
    "A seed-000 provider",
    "Decisions beyond the seed's list",
    "as the seed lists it",
    "(seed 003, question 2)",
    "use `hive-merge PR_NUMBER`",
    'name = "Hive"',
    "X-Hive-Proxy-Reason: hard_deny",
    "see crux #14211",
])
def test_a_pointer_is_caught(text: str) -> None:
    assert pointers(text), text


@pytest.mark.parametrize("text", [
    "random.seed(4)",
    "@settings(derandomize=True)",
    "The adapters' own fixtures are the seeds (real wire shapes)",
    "the seed of the fuzzer is fixed",
    "seeds(adapter)",
    'mktemp("git-seed")',
    "Delete or archive a repository.",
    "archiveRepository",
    "the question the gate asks",
    "every question 0.42 gave is still given",
    "color: #123456",
    "PR #42",
])
def test_ordinary_words_pass(text: str) -> None:
    assert pointers(text) == [], text
