"""A third party's plugin reaches the agent gate: its adapter's ``commands`` are the forge programs.

The plugin is built here, in a temporary directory, as pip would leave it installed: the
package and a ``.dist-info`` with its ``entry_points.txt``, on ``PYTHONPATH``. The hook runs
as a subprocess with the JSON Claude Code sends for a Bash tool call, and the decision is the
JSON the agent reads. No program list in the gate names ``bb``: only the plugin does.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Hooked

ADAPTER = '''
from collections.abc import Callable, Sequence

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow.request import Classification, Request, ToolCall


class BbAdapter(Adapter):
    """A forge whose CLI is `bb`: `bb pr merge N` merges pull request N of the current repository."""

    name = "bbforge"
    default_hosts = ("bb.example.test",)
    commands = ("bb",)

    def classify(self, request: Request) -> Classification:
        return Classification.unknown("the test forge's wire is not read")

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        if list(argv[1:3]) == ["pr", "merge"]:
            return ToolCall(("pr.merge",), repo="team/app", adapter=self.name, summary=" ".join(argv[:4]))
        return None


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(BbAdapter())
'''


def install_plugin(site: Path, name: str = "bbforge", source: str = ADAPTER) -> None:
    """``gitvow-NAME`` 0.1 as an installer leaves it: its package and its metadata."""
    package = site / f"gitvow_{name}"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""gitvow adapter {name} (a test plugin)."""\n')
    (package / "plugin.py").write_text(textwrap.dedent(source))
    info = site / f"gitvow_{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gitvow-{name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[gitvow]\n{name} = gitvow_{name}.plugin\n")
    (info / "top_level.txt").write_text(f"gitvow_{name}\n")
    (info / "RECORD").write_text("")


def claude_bash(command: str, cwd: Path) -> dict[str, object]:
    """Claude Code's PreToolUse input for a Bash tool call, as it sends it on the hook's stdin."""
    return {"session_id": "3f1c2a9e-5b7d-4e0a-9c8f-1d2e3f4a5b6c",
            "transcript_path": str(cwd / ".claude" / "transcript.jsonl"), "cwd": str(cwd),
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Merge pull request 3"}}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    install_plugin(path)
    return path


def test_a_third_party_programs_reach_the_gate(repo: Path, site: Path, tmp_path: Path,
                                               write_policy: Callable[..., Path],
                                               hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"agents": {"claude": {"mode": "issues_prs_merge"}}})
    with_plugin = {"PYTHONPATH": str(site), "GITVOW_CACHE_DIR": str(tmp_path / "cache-with")}
    answer = hook("claude", "PreToolUse", claude_bash("bb pr merge 3", repo), cwd=repo, extra_env=with_plugin)
    assert answer.code == 0 and answer.stderr == ""
    assert answer.json() == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": (
            "gitvow refused pr.merge on team/app (bb pr merge 3): pr.merge needs a human's approval; send it "
            "through the gitvow proxy, which stages it for a human and answers with an approval id (`gitvow "
            "approvals wait ID`), or ask a human to do it. reason=hard_deny"),
    }}
    # the plugin index names the program beside the adapter and its plugin
    index = json.loads((tmp_path / "cache-with" / "plugins.json").read_text())
    assert index["adapters"]["bbforge"]["commands"] == ["bb"]
    assert index["adapters"]["bbforge"]["distribution"] == "gitvow-bbforge"
    # read from the index the second time: the same answer, and another bb command is the adapter's to judge
    again = hook("claude", "PreToolUse", claude_bash("bb pr merge 3", repo), cwd=repo, extra_env=with_plugin)
    assert again == answer
    assert hook("claude", "PreToolUse", claude_bash("bb pr list", repo), cwd=repo, extra_env=with_plugin) == Hooked(0, "", "")


def test_without_the_plugin_bb_is_no_forge_program(repo: Path, tmp_path: Path, write_policy: Callable[..., Path],
                                                   hook: Callable[..., Hooked]) -> None:
    write_policy(repo, {"agents": {"claude": {"mode": "issues_prs_merge"}}})
    without = {"GITVOW_CACHE_DIR": str(tmp_path / "cache-without")}
    assert hook("claude", "PreToolUse", claude_bash("bb pr merge 3", repo), cwd=repo, extra_env=without) == Hooked(0, "", "")
    index = json.loads((tmp_path / "cache-without" / "plugins.json").read_text())
    assert "bb" not in {program for entry in index["adapters"].values() for program in entry["commands"]}


@pytest.mark.parametrize("first", ["bbforge", "bbshadow"])
def test_tryfirst_orders_the_adapters_at_the_gate(first: str, repo: Path, tmp_path: Path,
                                                  write_policy: Callable[..., Path],
                                                  hook: Callable[..., Hooked]) -> None:
    """Two plugins read ``bb``; each refuses ``bb pr merge 3`` its own way, and the gate answers
    with the first adapter's refusal: the one whose ``register_adapters`` is ``tryfirst``, on the
    call that discovers the plugins and on the next, read from the index, alike."""
    site = tmp_path / "site"
    mark = "@hookimpl(tryfirst=True)"
    install_plugin(site, "bbforge", ADAPTER.replace("@hookimpl", mark) if first == "bbforge" else ADAPTER)
    shadow = (ADAPTER.replace('name = "bbforge"', 'name = "bbshadow"')
              .replace('ToolCall(("pr.merge",)', 'ToolCall(("repo.delete",)'))
    install_plugin(site, "bbshadow", shadow.replace("@hookimpl", mark) if first == "bbshadow" else shadow)
    write_policy(repo, {"agents": {"claude": {"mode": "issues_prs_merge"}}})
    env = {"PYTHONPATH": str(site), "GITVOW_CACHE_DIR": str(tmp_path / "cache")}
    expected = "gitvow refused pr.merge" if first == "bbforge" else "gitvow refused repo.delete"
    for _ in ("discovery", "index"):
        answer = hook("claude", "PreToolUse", claude_bash("bb pr merge 3", repo), cwd=repo, extra_env=env)
        assert answer.json()["hookSpecificOutput"]["permissionDecisionReason"].startswith(expected)
