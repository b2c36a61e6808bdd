from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitvow.errors import PolicyError
from gitvow.modes import Mode
from gitvow.policy.load import load_policy
from gitvow.relay import APPROVAL

RELAYS = {APPROVAL.command: APPROVAL}

TOML = """
[hosts]
"github.example.test" = "github"

[operations."pr.merge"]
min_mode = "issues_prs_merge"

[operations."issue.comment"]
min_mode = "issues_and_prs"
capability = "converse"

[operations."pr.create"]
relay = "open-pr"

[relays.open-pr]
usage = "open-pr --title T"
what = "opening a pull request"

[agents.bot]
mode = "issues_only"
capabilities = ["converse"]
autonomy = { "o/r" = "issues_and_prs" }
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toml_and_json_load_to_the_same_policy(tmp_path: Path) -> None:
    import tomllib

    toml_policy = load_policy(write(tmp_path, "p.toml", TOML), relays=RELAYS)
    json_policy = load_policy(write(tmp_path, "p.json", json.dumps(tomllib.loads(TOML))), relays=RELAYS)
    assert toml_policy.model == json_policy.model
    assert toml_policy.table["pr.merge"].min_mode is Mode.ISSUES_PRS_MERGE
    assert toml_policy.table["pr.create"].relay == "open-pr"
    assert toml_policy.hosts == {"github.example.test": "github"}
    grant = toml_policy.grant_for("bot")
    assert grant is not None and grant.mode_for("O/R") is Mode.ISSUES_AND_PRS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[operations."pr.mrge"]\ndeny = true\n', r"p\.toml: operations\.'pr\.mrge': unknown operation 'pr\.mrge'"),
        ('[operations."pr.merge"]\nmin_mode = "sometimes"\n', r"p\.toml: operations\.'pr\.merge'\.min_mode: Input should be 'advisory'"),
        ('[operations."pr.merge"]\nmin_mdoe = "advisory"\n', r"operations\.'pr\.merge'\.min_mdoe: unknown key"),
        ('[operations."pr.merge"]\nmin_mode = "advisory"\ndeny = true\n', r"expected exactly one of min_mode, relay or deny"),
        ('[operations."pr.merge"]\nrelay = "nope"\n', r"operations\.'pr\.merge'\.relay: relay 'nope' is not defined"),
        ('[hostz]\n"a" = "b"\n', r"p\.toml: hostz: unknown key"),
        ('[agents.bot]\nmode = "god"\n', r"agents\.bot\.mode"),
        ("[hosts\n", r"p\.toml: not valid TOML"),
    ],
)
def test_errors_name_the_file_the_key_and_what_was_expected(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(PolicyError, match=expected):
        load_policy(write(tmp_path, "p.toml", text), relays=RELAYS)


def test_json_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"p\.json: not valid JSON: .* line 2 column"):
        load_policy(write(tmp_path, "p.json", '{\n  "hosts": ,\n}'))


def test_unsupported_extension_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"expected a \.toml or \.json file"):
        load_policy(write(tmp_path, "p.yaml", "hosts: {}"))
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.toml")
