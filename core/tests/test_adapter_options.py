"""Adapter options: declared as a typed model, validated in one place, shown by the schema."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from gitvow.adapter import Adapter, configure_adapters, configured
from gitvow.errors import PolicyError
from gitvow.options import AdapterOptions, PositiveInt
from gitvow.policy.model import composed_model
from gitvow.request import Classification, Request


class ForgeOptions(AdapterOptions):
    limit: PositiveInt = 10
    root: str = ""


class Forge(Adapter):
    name = "forge"

    def __init__(self) -> None:
        self.limit = 10
        self.seen: object = None

    @classmethod
    def options_model(cls) -> type[ForgeOptions]:
        return ForgeOptions

    def configure(self, options: ForgeOptions) -> None:
        self.seen = options
        self.limit = options.limit

    def classify(self, request: Request) -> Classification:
        return Classification.unknown("test adapter")


class Plain(Adapter):
    name = "plain"

    def classify(self, request: Request) -> Classification:
        return Classification.unknown("test adapter")


class Loose(Forge):
    name = "loose"

    @classmethod
    def options_model(cls) -> type[BaseModel]:
        return BaseModel  # does not forbid unknown keys


def test_the_adapter_gets_a_validated_object_on_a_copy() -> None:
    original = Forge()
    done = configure_adapters({"forge": original}, {"forge": {"limit": 3}}, source="p.toml")["forge"]
    assert isinstance(done, Forge) and done is not original
    assert isinstance(done.seen, ForgeOptions) and done.limit == 3
    assert original.limit == 10 and original.seen is None


@pytest.mark.parametrize(("options", "where", "what"), [
    ({"limit": 0}, "adapters.forge.limit", "greater than 0"),
    ({"limit": True}, "adapters.forge.limit", "integer"),
    ({"limit": "5"}, "adapters.forge.limit", "integer"),
    ({"limt": 5}, "adapters.forge.limt", "unknown option (typo?); expected one of limit, root"),
])
def test_errors_name_the_file_and_the_key_path(options: dict[str, object], where: str, what: str) -> None:
    with pytest.raises(PolicyError) as info:
        configure_adapters({"forge": Forge()}, {"forge": options}, source="p.toml")
    assert str(info.value).startswith(f"p.toml: {where}: ") and what in str(info.value)


def test_an_adapter_without_options_refuses_any_and_accepts_an_empty_table() -> None:
    with pytest.raises(PolicyError, match=r"^p\.toml: adapters\.plain\.x: adapter 'plain' takes no options, got x$"):
        configure_adapters({"plain": Plain()}, {"plain": {"x": 1}}, source="p.toml")
    assert isinstance(configured(Plain(), {}), Plain)


def test_an_options_model_must_forbid_unknown_keys() -> None:
    with pytest.raises(PolicyError, match=r"adapters\.loose: plugin 'loose'.*extra='forbid'"):
        configured(Loose(), {"limit": 1})


def test_the_schema_shows_each_installed_adapters_options() -> None:
    schema = composed_model((), [Forge(), Plain()]).model_json_schema()
    by_name = schema["$defs"]["AdapterOptionsByName"]
    assert set(by_name["properties"]) == {"forge", "plain"} and by_name["additionalProperties"] is False
    forge = schema["$defs"]["ForgeOptions"]
    assert forge["additionalProperties"] is False and forge["properties"]["limit"]["exclusiveMinimum"] == 0


def test_policy_schema_lists_the_plugins_options(gitvow_cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    schema = json.loads(gitvow_cli(["policy", "schema"]).stdout)
    by_name = schema["$defs"]["AdapterOptionsByName"]["properties"]
    assert "inference" in by_name
    if "gitsmart" in by_name:
        assert "strip_prefix" in schema["$defs"]["GitSmartOptions"]["properties"]


def test_policy_check_names_the_file_and_the_option(gitvow_cli: Callable[..., subprocess.CompletedProcess[str]],
                                                    tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text("[adapters.inference]\nmodel_limit = 3\n")
    result = gitvow_cli(["policy", "check", str(policy)])
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"gitvow: error: {policy}: adapters.inference.model_limit: adapter 'inference' takes no options, got model_limit"
    )
