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
    assert info.distribution == "gitvow" and info.adapters == ("inference",)


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
