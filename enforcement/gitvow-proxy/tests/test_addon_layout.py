"""The proxy's addons are one concern each and never import each other, nor does the store's
interface or any store import another store: each shares only what it names (Shared, the
flow's metadata, the store interface)."""

from __future__ import annotations

import ast
from pathlib import Path

import gitvow_proxy

SOURCE = Path(gitvow_proxy.__file__).parent
ADDON_MODULES = {f"gitvow_proxy.addons.{p.stem}": p for p in (SOURCE / "addons").glob("*.py")
                 if p.stem not in ("__init__", "chain")}
ADDON_MODULES["gitvow_proxy.mcp.addons"] = SOURCE / "mcp" / "addons.py"
STORE_MODULES = {f"gitvow_proxy.store.{p.stem}": p for p in (SOURCE / "store").glob("*_store.py")}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (names of ``from X import Y`` as X.Y too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_addons_are_found() -> None:
    assert {"gitvow_proxy.addons.enforcement", "gitvow_proxy.addons.proxy_identity",
            "gitvow_proxy.addons.approval_relay", "gitvow_proxy.mcp.addons"} <= set(ADDON_MODULES)
    assert set(STORE_MODULES) == {"gitvow_proxy.store.memory_store", "gitvow_proxy.store.sqlite_store",
                                  "gitvow_proxy.store.redis_store"}


def test_no_addon_imports_another() -> None:
    for name, path in ADDON_MODULES.items():
        others = {module for module in imported(path) if module in ADDON_MODULES and module != name}
        others |= {module for module in imported(path) if module in ("gitvow_proxy.addons", "gitvow_proxy.addon")}
        assert others == set(), f"{name} imports {sorted(others)}"


def test_no_store_imports_another_or_a_private_name() -> None:
    for name, path in STORE_MODULES.items():
        names = imported(path)
        others = {module for module in names if module in STORE_MODULES and module != name}
        private = {module for module in names if module.startswith("gitvow_proxy.") and
                   module.rpartition(".")[2].startswith("_")}
        assert others == set() and private == set(), f"{name} imports {sorted(others | private)}"
        assert "gitvow_proxy.store" not in names  # the package imports the stores, never the reverse


def test_file_and_class_names_are_unique_in_the_distribution() -> None:
    files = [p for p in SOURCE.rglob("*.py") if p.name != "__init__.py"]
    names = [p.name for p in files]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    classes = [node.name for p in files for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef)]
    assert len(classes) > 40
    assert sorted({c for c in classes if classes.count(c) > 1}) == []
