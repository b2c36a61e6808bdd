"""The README is what a new user reads first, so its shape is tested.

It leads with what gitvow does, then the two commands of a fresh machine (``bash scripts/run``,
``bash scripts/test``) and the approval flow; the agent's environment is one line to paste;
benchmark figures live in docs/benchmarks.md (one section per benchmark, each saying how to
reproduce it), never in the README; ``.python-version`` names the minor versions tox runs,
so pyenv picks whatever patch release is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"


def headings(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]


def test_readme_leads_with_what_it_does_the_two_commands_and_the_approval_flow() -> None:
    text = README.read_text(encoding="utf-8")
    first = headings(text)[:2]
    assert first == ["On a fresh machine", "The approval flow"]
    intro = text.split("\n## ", 1)[0]
    assert "decides which actions an AI coding agent may take" in intro
    fresh = text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip().split("#")[0].strip() for line in fresh.splitlines() if line.startswith("    ")]
    assert commands == ["bash scripts/run", "bash scripts/test"]
    for script in ("run", "test"):
        assert (ROOT / "scripts" / script).is_file()
    flow = text.split("## The approval flow", 1)[1].split("\n## ", 1)[0]
    for step in ("approvals list", "approvals approve", "approvals wait"):
        assert step in flow


def test_readme_holds_no_benchmark_table() -> None:
    rows = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    figures = re.compile(r"\d\s*(?:µs|ms|req/s|MB)\b|requests/s")
    assert [row for row in rows if figures.search(row)] == []
    assert "docs/benchmarks.md" in README.read_text(encoding="utf-8")


def test_every_benchmark_section_says_how_to_reproduce_it() -> None:
    """Each section names the command that reproduces it (others append sections here)."""
    text = BENCHMARKS.read_text(encoding="utf-8")
    sections = text.split("\n## ")[1:]
    assert len(sections) >= 8
    for section in sections:
        title = section.splitlines()[0]
        command = r"`(?:taskset -c \d+ )?(?:(?:python3? |pytest )[^`]*benchmarks/\w+\.py|bash scripts/\w+)"
        assert re.search(command, section), f"{title}: no command reproduces it"
    named = set(re.findall(r"benchmarks/(\w+\.py)", text))
    shipped = {path.name for path in (ROOT / "benchmarks").glob("*.py") if not path.name.startswith("_")}
    missing = shipped - named - {"conftest.py", "bench_gitlab.py", "bench_gitea.py", "bench_linear.py"}
    assert missing == set(), f"benchmarks without figures in docs/benchmarks.md: {sorted(missing)}"


def test_the_agent_environment_is_one_line_to_paste() -> None:
    text = README.read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if "gitvow env " in line and line.startswith("    ")]
    assert lines == ['eval "$(gitvow env --policy policy.toml --agent bot)"']
    run = (ROOT / "scripts" / "run").read_text(encoding="utf-8")
    printed = [line for line in run.splitlines() if line.strip().startswith("echo") and " env --policy" in line]
    assert len(printed) == 1 and 'eval \\"\\$(' in printed[0], printed


def test_python_version_names_the_minor_versions_tox_runs() -> None:
    versions = (ROOT / ".python-version").read_text(encoding="utf-8").split()
    assert versions and all(re.fullmatch(r"3\.\d+", version) for version in versions), versions
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    # every Python a tox environment names, in the default run (env_list) or the heavy one (labels)
    minors = set(re.findall(r"\bpy3(\d+)-", tox))
    assert minors, "tox.ini names no py3N environment"
    assert sorted(versions) == sorted(f"3.{minor}" for minor in minors)
