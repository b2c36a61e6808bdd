"""Discovery through real entry points: a broken plugin is named and the others still load."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitvow.plugins import installed, load


def make_distribution(root: Path, name: str, entry_points: str, modules: dict[str, str]) -> None:
    """A minimal installed distribution on a path entry: metadata plus entry points."""
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)


def test_the_builtin_inference_adapter_registers_like_any_plugin() -> None:
    found = installed()
    assert "inference" in found.adapters
    info = next(i for i in found.infos if i.name == "inference")
    assert info.distribution == "gitvow" and info.adapters == ("inference", "anthropic", "openai")


def test_broken_plugins_are_reported_by_name_and_the_rest_load(tmp_path: Path, gitvow_cli: Callable[..., Any]) -> None:
    make_distribution(
        tmp_path,
        "gitvow-broken",
        "[gitvow]\nbroken_import = broken_import\nbroken_hook = broken_hook\n",
        {
            "broken_import": "raise ImportError('missing dependency frobnicate')\n",
            "broken_hook": (
                "from gitvow.hookspecs import hookimpl\n"
                "@hookimpl\n"
                "def register_adapters(register):\n"
                "    raise ValueError('bad config')\n"
            ),
        },
    )
    result = gitvow_cli(["plugins", "--json"], env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    report = json.loads(result.stdout)
    failed = {f["plugin"]: f["error"] for f in report["failures"]}
    assert "missing dependency frobnicate" in failed["broken_import"]
    assert "register_adapters raised ValueError: bad config" in failed["broken_hook"]
    assert "inference" in {a["name"] for p in report["plugins"] for a in p["adapters"]}


def test_a_duplicate_adapter_name_is_reported_and_the_first_called_kept() -> None:
    from gitvow.adapters.inference import InferenceAdapter
    from gitvow.hookspecs import hookimpl

    class Impostor:
        @hookimpl
        def register_adapters(self, register):  # type: ignore[no-untyped-def]
            register(InferenceAdapter())

    # pluggy calls the plugin registered last first: the impostor registers first, and the
    # built-in's second registration of the same name is the reported failure.
    found = load(extra=[("impostor", Impostor())])
    assert any(f.plugin == "inference" and "already registered by 'impostor'" in str(f) for f in found.failures)
    assert found.adapter_plugin["inference"] == "impostor"


def test_registering_something_that_is_not_an_adapter_names_the_plugin() -> None:
    from gitvow.hookspecs import hookimpl

    class Wrong:
        @hookimpl
        def register_adapters(self, register):  # type: ignore[no-untyped-def]
            register("github")

    found = load(entry_points=False, extra=[("wrong", Wrong())])
    assert [f.plugin for f in found.failures] == ["wrong"]
    assert "expected a gitvow.adapter.Adapter" in str(found.failures[0])


def _adapter_plugin(adapter_name: str, **marks: bool) -> object:
    """A plugin object registering one toy adapter, its hook implementation marked ``marks``."""
    from gitvow.adapter import Adapter
    from gitvow.hookspecs import hookimpl
    from gitvow.request import Classification

    class Toy(Adapter):
        name = adapter_name

        def classify(self, request):  # type: ignore[no-untyped-def]
            return Classification.unknown("toy")

    class Plugin:
        @hookimpl(**marks)
        def register_adapters(self, register):  # type: ignore[no-untyped-def]
            register(Toy())

    return Plugin()


def test_hook_implementations_run_in_pluggys_order_tryfirst_and_trylast_honoured() -> None:
    found = load(entry_points=False, builtins=False, extra=[
        ("late", _adapter_plugin("late", trylast=True)),
        ("plain-1", _adapter_plugin("plain-1")),
        ("early", _adapter_plugin("early", tryfirst=True)),
        ("plain-2", _adapter_plugin("plain-2")),
    ])
    # pluggy: tryfirst first, trylast last, otherwise the plugin registered last runs first
    assert list(found.adapters) == ["early", "plain-2", "plain-1", "late"]
    assert not found.failures


def test_a_misspelled_hook_implementation_fails_its_plugin_by_name(tmp_path: Path, gitvow_cli: Callable[..., Any]) -> None:
    make_distribution(
        tmp_path,
        "gitvow-typo",
        "[gitvow]\ntypo = typo_plugin\n",
        {
            "typo_plugin": (
                "from gitvow.hookspecs import hookimpl\n"
                "@hookimpl\n"
                "def register_adaptors(register):\n"
                "    pass\n"
            ),
        },
    )
    result = gitvow_cli(["plugins", "--json"], env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    report = json.loads(result.stdout)
    failed = {f["plugin"]: f["error"] for f in report["failures"]}
    assert "register_adaptors" in failed["typo"] and "misspelled" in failed["typo"]
    assert "typo" not in {p["name"] for p in report["plugins"]}
    assert "inference" in {a["name"] for p in report["plugins"] for a in p["adapters"]}  # the others still load


def test_gitvow_disable_plugins_blocks_by_entry_point_or_distribution_name(
    tmp_path: Path, gitvow_cli: Callable[..., Any]
) -> None:
    make_distribution(
        tmp_path,
        "gitvow-explodes",
        "[gitvow]\nexplodes = explodes_plugin\n",
        {"explodes_plugin": "raise RuntimeError('imported although disabled')\n"},
    )
    env = {"PYTHONPATH": str(tmp_path)}
    assert gitvow_cli(["plugins"], env=env).returncode == 1  # enabled: it fails to import
    for spelling in ("explodes", "gitvow-explodes", "inference,gitvow-explodes", "relays gitvow-explodes"):
        result = gitvow_cli(["plugins", "--json"], env={**env, "GITVOW_DISABLE_PLUGINS": spelling})
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert not report["failures"]
        assert "explodes" in report["disabled"]
    result = gitvow_cli(["plugins", "--json"], env={"GITVOW_DISABLE_PLUGINS": "inference"})
    assert "inference" not in {a["name"] for p in json.loads(result.stdout)["plugins"] for a in p["adapters"]}


def test_built_in_plugins_are_registered_in_code_not_as_entry_points_of_the_core() -> None:
    import importlib.metadata as metadata

    from gitvow.plugins import BUILTIN_PLUGINS

    core_entry_points = [ep for ep in metadata.entry_points(group="gitvow") if ep.dist and ep.dist.name == "gitvow"]
    assert core_entry_points == []
    assert {name for name, _module in BUILTIN_PLUGINS} <= {info.name for info in installed().infos}


def test_policy_sections_a_key_claimed_twice_fails_the_later_plugin() -> None:
    from pydantic import BaseModel

    from gitvow.hookspecs import hookimpl
    from gitvow.policy.sections import PolicySection

    class Mine(BaseModel):
        budget: int = 0

    class Theirs(BaseModel):
        budget: int = 0

    class Agents(BaseModel):
        agents: int = 0

    def plugin(model: type[BaseModel]) -> object:
        class Plugin:
            @hookimpl
            def register_policy_sections(self, register):  # type: ignore[no-untyped-def]
                register(PolicySection(model, "gitvow-test"))

        return Plugin()

    found = load(entry_points=False, builtins=False,
                 extra=[("theirs", plugin(Theirs)), ("mine", plugin(Mine)), ("core-key", plugin(Agents))])
    assert [s.model for s in found.sections] == [Mine]
    messages = {f.plugin: str(f) for f in found.failures}
    assert "'budget' is already read by mine" in messages["theirs"]
    assert "'agents' is already read by the core" in messages["core-key"]


def test_sections_are_computed_once_so_a_refusal_is_one_failure() -> None:
    from pydantic import BaseModel

    from gitvow.hookspecs import hookimpl
    from gitvow.policy.sections import PolicySection

    class Agents(BaseModel):
        agents: int = 0

    class Plugin:
        @hookimpl
        def register_policy_sections(self, register):  # type: ignore[no-untyped-def]
            register(PolicySection(Agents, "gitvow-test"))

    found = load(entry_points=False, builtins=False, extra=[("core-key", Plugin())])
    for _ in range(3):
        assert found.sections == ()
        found.relays  # noqa: B018
    assert [f.plugin for f in found.failures] == ["core-key"]
    assert found.sections is found.sections and found.relays is found.relays


def test_plugins_add_commands_and_a_taken_name_fails_the_later_plugin() -> None:
    from gitvow.cli.command import Command
    from gitvow.hookspecs import hookimpl

    def plugin(*names: str) -> object:
        class Plugin:
            @hookimpl
            def register_commands(self, register):  # type: ignore[no-untyped-def]
                for name in names:
                    register(Command(name, f"example.{name}", f"the {name} command"))

        return Plugin()

    found = load(entry_points=False, builtins=False,
                 extra=[("late", plugin("deploy")), ("early", plugin("deploy", "audit")), ("greedy", plugin("ops"))])
    assert sorted(found.commands) == ["audit", "deploy"]
    assert found.command_plugin == {"deploy": "early", "audit": "early"}
    messages = {f.plugin: str(f) for f in found.failures}
    assert "command 'deploy' is already added by early" in messages["late"]
    assert "command 'ops' is already added by the core" in messages["greedy"]
    assert len(found.failures) == 2  # read again: not reported twice
    found.commands  # noqa: B018
    assert len(found.failures) == 2
