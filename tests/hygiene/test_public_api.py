"""Shipped code uses its dependencies through their public APIs only.

gitvow sits on mitmproxy, redis-py, SQLite, pydantic, pluggy and others, with upper bounds on
their majors; within a major only their public names are promised. So the ``src/`` tree of
every distribution (core, enforcement/*, plugins/*) may not:

- import a private name of another package: ``import x._y``, ``from x._y import z``,
  ``from x import _y``, ``importlib.import_module("x._y")`` (any package but gitvow's own,
  the standard library's included; ``__future__`` and dunders are not private);
- put anything in ``sys.modules`` (``sys.modules[name] = ...``, ``sys.modules.update``,
  ``setdefault``, ``__setitem__``, or ``del``): a stand-in for a module is a private
  agreement with whoever imports it next;
- assign to, or delete, an attribute of an imported module or class of another package
  (``http.MessageData.__post_init__ = ...``, ``setattr(redis, ...)``): monkeypatching.

Each rule is checked on the tree, and on a planted file that breaks it, so the scan can fail.
Only a name its own package documents as the way to use it may stand in :data:`ALLOWED`,
with the reason, or a debt, named as one, until it is paid.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: ``module`` → why importing it is using a public API although its name starts with ``_``, or
#: the debt it is (named DEBT, with who pays it) until it is replaced.
ALLOWED: dict[str, str] = {
    "_thread": "the standard library's documented low-level threading module "
               "(https://docs.python.org/3/library/_thread.html)",
    "opentelemetry._logs": "OpenTelemetry's logs API: its only published home, documented as such "
                           "(https://opentelemetry-python.readthedocs.io/en/latest/sdk/_logs.html; the "
                           "logs signal is still 'development' there)",
    "opentelemetry.sdk._logs": "OpenTelemetry's logs SDK, as above",
    "opentelemetry.sdk._logs.export": "OpenTelemetry's logs SDK, as above",
    "opentelemetry.exporter.otlp.proto.http._log_exporter": "the OTLP/HTTP logs exporter, as above",
}

PLANTED = '''
import mitmproxy._internal
import redis._parsers as parsers
from redis._parsers import BaseParser
from redis import _compat
from mitmproxy import http
from mitmproxy.http import MessageData
import redis
import sys
import sqlite3 as db
from __future__ import annotations
from gitvow import _private
from gitvow_proxy._state import x

sys.modules["mitmproxy.addons"] = object()
sys.modules.setdefault("x", object())
del sys.modules["y"]
http.MessageData.__post_init__ = None
MessageData.__post_init__ = None
redis.Redis.execute_command += None
setattr(redis, "Redis", None)
delattr(db, "connect")
del http.Request


def fine(flow):
    flow.request.host = "example.com"
    http = object()
    local = MessageData
    local.x = 1


import importlib
parser = importlib.import_module("redis._parsers.resp3")
constants = __import__("sre._constants")
ours = importlib.import_module("gitvow_proxy._state")
'''

EXPECTED = [
    "planted.py:2: imports the private mitmproxy._internal",
    "planted.py:3: imports the private redis._parsers",
    "planted.py:4: imports the private redis._parsers",
    "planted.py:5: imports the private redis._compat",
    "planted.py:15: puts a module in sys.modules",
    "planted.py:16: puts a module in sys.modules",
    "planted.py:17: puts a module in sys.modules",
    "planted.py:18: monkeypatches http.MessageData.__post_init__ (mitmproxy)",
    "planted.py:19: monkeypatches MessageData.__post_init__ (mitmproxy)",
    "planted.py:20: monkeypatches redis.Redis.execute_command (redis)",
    "planted.py:21: monkeypatches redis (redis)",
    "planted.py:22: monkeypatches db (sqlite3)",
    "planted.py:23: monkeypatches http.Request (mitmproxy)",
    "planted.py:34: imports the private redis._parsers.resp3",
    "planted.py:35: imports the private sre._constants",
]


def _distributions() -> list[Path]:
    """The ``src/`` directory of every distribution: core, enforcement/*, plugins/*."""
    return sorted([ROOT / "core" / "src", *(ROOT / "enforcement").glob("*/src"), *(ROOT / "plugins").glob("*/src")])


def _ours(module: str) -> bool:
    return module.split(".")[0].startswith("gitvow")


def _private(module: str) -> bool:
    return module not in ALLOWED and any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
               for part in module.split("."))


class _Scan(ast.NodeVisitor):
    """One file's breaches, as ``path:line: what``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found: list[str] = []
        #: Names bound by an import of another package, and that package.
        self.foreign: dict[str, str] = {}

    def _say(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.name}:{getattr(node, 'lineno', 0)}: {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _ours(alias.name):
                continue
            if _private(alias.name):
                self._say(node, f"imports the private {alias.name}")
            bound = alias.asname or alias.name.split(".")[0]
            self.foreign[bound] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or _ours(module):
            return
        if _private(module):
            self._say(node, f"imports the private {module}")
        for alias in node.names:
            if _private(alias.name):
                self._say(node, f"imports the private {module}.{alias.name}")
            self.foreign[alias.asname or alias.name] = module.split(".")[0]

    def _root(self, node: ast.expr) -> str | None:
        """The foreign package an attribute chain starts from (``http.MessageData.x``), if any."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return self.foreign.get(node.id) if isinstance(node, ast.Name) else None

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Subscript) and _is_sys_modules(target.value):
            self._say(target, "puts a module in sys.modules")
        elif isinstance(target, ast.Attribute) and (package := self._root(target)) is not None:
            self._say(target, f"monkeypatches {ast.unparse(target)} ({package})")
        elif isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self._target(item)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            package = self._root(node.args[0])
            if package is not None:
                self._say(node, f"monkeypatches {ast.unparse(node.args[0])} ({package})")
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            module = str(node.args[0].value)
            if not _ours(module) and _private(module):
                self._say(node, f"imports the private {module}")
        if (isinstance(func, ast.Attribute) and _is_sys_modules(func.value)
                and func.attr in ("update", "setdefault", "__setitem__")):
            self._say(node, "puts a module in sys.modules")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node)

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function's own names shadow the module's (``http = ...`` inside is a local)."""
        outer = dict(self.foreign)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            self.foreign.pop(arg.arg, None)
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                self.foreign.pop(child.id, None)
        self.generic_visit(node)
        self.foreign = outer


def _is_sys_modules(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "modules" and \
        isinstance(node.value, ast.Name) and node.value.id == "sys"


def breaches(path: Path, name: str) -> list[str]:
    scan = _Scan(name)
    scan.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return sorted(scan.found, key=lambda line: int(line.split(":")[1]))


def test_the_scan_sees_every_distribution() -> None:
    names = {src.parent.name for src in _distributions()}
    assert {"core", "gitvow-proxy", "gitvow-gate", "gitvow-github", "gitvow-gitsmart"} <= names


def test_shipped_code_uses_public_apis_only() -> None:
    found = [line for src in _distributions() for path in sorted(src.rglob("*.py"))
             for line in breaches(path, path.relative_to(ROOT).as_posix())]
    assert found == []


def test_a_planted_file_breaks_every_rule(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED)
    assert breaches(planted, "planted.py") == EXPECTED


def test_every_allowance_is_still_used() -> None:
    """An entry of :data:`ALLOWED` that nothing imports any more goes (it would hide a new one)."""
    imported = set()
    for src in _distributions():
        for path in src.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    imported.add(node.module)
                elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                    imported.add(str(node.args[0].value))
    assert sorted(set(ALLOWED) - imported) == []
