"""One validator for ``gitvow policy check``, proxy start and reload: cross-references included.

Each file below loads under its own keys' models, and then would be refused by the proxy or
silently do nothing. ``gitvow policy check`` and the proxy's loader (``build_runtime``, which
start and reload both call) must refuse each, naming the file and the key.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from proxy_support import GITVOW

from gitvow.errors import PolicyError
from gitvow_proxy.runtime import build_runtime
from gitvow_proxy.store import MemoryStore

AGENT = '[agents.bot]\nmode = "issues_and_prs"\nsecret_env = "BOT_SECRET"\n'

BAD: list[tuple[str, str, str]] = [
    ("credentials-typo", '[credentials.githb]\ntoken_env = "GITHUB_TOKEN"\n' + AGENT, "credentials.githb"),
    ("capability-typo", AGENT + 'capabilities = ["convers"]\n', "agents.bot.capabilities.0"),
    ("lane-typo", AGENT + '[write_surface]\nlanes = { triage = ["isue.*"] }\nagents = { bot = "triage" }\n',
     "write_surface.lanes.triage.0"),
    ("budget-agent-typo", AGENT + "[budget]\nagents = { bott = { writes = 3 } }\n", "budget.agents.bott"),
    ("repos-shape", AGENT + 'repos = ["team"]\n', "agents.bot.repos.0"),
    # kin of the five
    ("write-surface-agent-typo", AGENT + '[write_surface]\nlanes = { t = ["issue.*"] }\nagents = { bott = "t" }\n',
     "write_surface.agents.bott"),
    ("autonomy-one-segment", AGENT + '[agents.bot.autonomy]\n"team*" = "issues_prs_merge"\n', "agents.bot.autonomy"),
    ("paused-shape", AGENT + '[run_state]\npaused = ["app"]\n', "run_state.paused.0"),
    ("allowed-repos-shape", AGENT + '[proxy]\nallowed_repos = ["team/"]\n', "proxy.allowed_repos.0"),
]

GOOD = (
    '[credentials.github]\ntoken_env = "GITHUB_TOKEN"\n' + AGENT + 'capabilities = ["converse"]\n'
    'repos = ["team/*", "group/sub/app"]\n[agents.bot.autonomy]\n"team/app" = "issues_prs_merge"\n'
    '[write_surface]\nlanes = { triage = ["issue.*", "label.add"] }\nagents = { bot = "triage" }\n'
    '[budget]\nagents = { bot = { writes = 3 } }\n[run_state]\npaused = ["team/old"]\n'
)


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GITVOW, "policy", "check", str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("name", "text", "key"), BAD, ids=[b[0] for b in BAD])
def test_policy_check_and_the_proxy_refuse_the_same_file_naming_the_key(tmp_path: Path, name: str, text: str,
                                                                         key: str) -> None:
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    done = check(path)
    assert done.returncode != 0, done.stdout
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert str(path) in line and key in line and "expected" in line, line
    # proxy start and reload both build the runtime through the same loader
    with pytest.raises(PolicyError) as caught:
        build_runtime(path, MemoryStore())
    assert key in str(caught.value) and str(path) in str(caught.value)


def test_a_consistent_file_passes_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "good.toml"
    path.write_text(GOOD, encoding="utf-8")
    done = check(path)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test")
    monkeypatch.setenv("BOT_SECRET", "s3cret-s3cret")
    runtime = build_runtime(path, MemoryStore())
    assert "bot" in runtime.policy.model.agents
