"""The inventory script's path normalisation (the npm part needs node and the registry, so it is not run here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "derive_inventory.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("derive_inventory", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_templates_from_recorded_calls() -> None:
    template = load().template
    assert template("", "projects/ZZprojectIdZZ/merge_requests/ZZmergerequestIIdZZ/merge") == (
        "/projects/:projectId/merge_requests/:mergerequestIId/merge"
    )
    assert template("projects", "ZZresourceIdZZ/labels") == "/projects/:resourceId/labels"
    assert template("", "/keys?fingerprint=ZZfingerprintZZ") == "/keys"
    assert template("groups", "ZZgroupIdZZ/") == "/groups/:groupId"
