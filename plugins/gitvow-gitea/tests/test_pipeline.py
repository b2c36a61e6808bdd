"""The ``gitea`` plugin as a user installs it: found through its entry point, run by the engine."""

from __future__ import annotations

import tomllib

from gitvow import denial
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import load
from gitvow.policy.load import parse_policy
from gitvow.request import Request
from gitvow_gitea import GiteaAdapter

MERGE = "https://codeberg.org/api/v1/repos/team/app/pulls/7/merge"


def engine(text: str = "") -> Engine:
    # A fresh load: installed() is shared per process, and options configure its adapters in place.
    plugins = load()
    return Engine(parse_policy(tomllib.loads(text), relays=plugins.relays), plugins)


def test_the_entry_point_registers_the_adapter_for_codeberg() -> None:
    eng = engine('[hosts]\n"git.example.test" = "gitea"\n')
    adapter = eng.plugins.adapters["gitea"]
    assert isinstance(adapter, GiteaAdapter)
    assert eng.hosts.lookup("codeberg.org") is adapter
    assert eng.hosts.lookup("git.example.test") is adapter


def test_a_merge_is_relayed_at_every_mode_with_tea_named() -> None:
    """With an operator's relay command (by default a merge is staged for approval, which names no tool)."""
    eng = engine('[operations."pr.merge"]\nrelay = "hive-merge"\n[relays.hive-merge]\nusage = "hive-merge PR_NUMBER"\n')
    for mode in Mode:
        decision = eng.decide(Request.from_url("POST", MERGE, body=b'{"Do": "merge"}'), Caller("agent", Grant(mode)))
        assert decision.action is Action.DENY
        assert decision.headers[denial.REASON_HEADER] == "hard_deny"
        assert decision.message is not None and "hive-merge" in decision.message and "tea pr merge" in decision.message


def test_the_prefix_option_comes_from_the_policy_file() -> None:
    eng = engine('[hosts]\n"forge.example.test" = "gitea"\n[adapters.gitea]\nprefix = "/gitea"\n')
    request = Request.from_url("POST", "https://forge.example.test/gitea/api/v1/repos/team/app/issues", body=b"{}")
    decision = eng.decide(request, Caller("agent", Grant(Mode.ISSUES_ONLY)))
    assert decision.action is Action.FORWARD
    assert decision.classification is not None and decision.classification.repo == "team/app"


def test_gitvow_disable_plugins_switches_the_gitea_plugin_off() -> None:
    import json
    import os
    import subprocess
    import sys

    def plugins(extra_env: dict[str, str]) -> dict[str, object]:
        result = subprocess.run([sys.executable, "-m", "gitvow.cli.main", "plugins", "--json"], capture_output=True,
                                text=True, env={**os.environ, **extra_env}, timeout=60)
        report: dict[str, object] = json.loads(result.stdout)
        return report

    def adapters(report: dict[str, object]) -> set[str]:
        return {a["name"] for p in report["plugins"] for a in p["adapters"]}  # type: ignore[attr-defined,index]

    assert "gitea" in adapters(plugins({}))
    disabled = plugins({"GITVOW_DISABLE_PLUGINS": "gitvow-gitea"})
    assert "gitea" not in adapters(disabled)
    assert disabled["disabled"] == ["gitea"]
