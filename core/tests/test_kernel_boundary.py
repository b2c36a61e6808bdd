"""The kernel's boundary: what judges requests and tool calls imports no loading, no discovery
and no enforcement point.

The kernel is the engine (:mod:`gitvow.pipeline`) and every module it judges with. Loading
(:mod:`gitvow.policy.load`, pydantic) and discovery (:mod:`gitvow.plugins`, pluggy,
``importlib.metadata``) only produce its inputs, so the agent hook's forge path can build an
engine from the cached compiled policy and one adapter. This one test is the guard; a module
added to the kernel is added here.
"""

from __future__ import annotations

import json
import subprocess
import sys

KERNEL = (
    "gitvow.pipeline", "gitvow.gates", "gitvow.evaluator", "gitvow.policy.compile", "gitvow.policy.table",
    "gitvow.vocabulary", "gitvow.modes", "gitvow.request", "gitvow.verdict", "gitvow.relay", "gitvow.denial",
    "gitvow.adapter", "gitvow.hosts", "gitvow.targets", "gitvow.comments", "gitvow.paths", "gitvow.repos",
    "gitvow.errors", "gitvow.refusal", "gitvow.hookspecs",
)
#: Loading, discovery and the enforcement points (and what only they need).
OUTSIDE = ("pydantic", "pluggy", "importlib.metadata", "gitvow.plugins", "gitvow.policy.load", "gitvow.policy.model",
           "gitvow_proxy", "gitvow_gate", "mitmproxy")

PROBE = """
import json, sys
for name in json.loads(sys.argv[1]):
    __import__(name)
from gitvow.adapter import Adapter, configure_adapters
from gitvow.pipeline import AdapterSet, Engine
from gitvow.policy.compile import CompiledPolicy, compile_policy
from gitvow.request import Classification, Request, ToolCall
from gitvow.gates import Caller

class Forge(Adapter):
    name = "forge"
    default_hosts = ("forge.test",)
    def classify(self, request):
        return Classification(("pr.merge",), repo="o/r")

compiled = CompiledPolicy.from_plain(compile_policy({"agents": {"bot": {"mode": "issues_and_prs"}}}).to_plain())
engine = Engine(compiled, AdapterSet({"forge": Forge()}))
caller = Caller("bot", compiled.grant_for("bot"))
engine.decide(Request.from_url("PUT", "https://forge.test/x"), caller)
engine.decide_call(ToolCall(("pr.merge",), repo="o/r"), engine.adapters["forge"], caller)
configure_adapters({"forge": Forge()}, {})
print(json.dumps(sorted(m for m in sys.modules if m in json.loads(sys.argv[2]) or m.split(".")[0] in json.loads(sys.argv[2]))))
"""


def test_the_kernel_imports_no_pydantic_no_pluggy_and_no_enforcement_point() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(KERNEL), json.dumps(OUTSIDE)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_probe_sees_an_import_across_the_boundary() -> None:
    """The guard can fail: importing the loader is seen."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps([*KERNEL, "gitvow.policy.load"]),
                           json.dumps(OUTSIDE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert {"pydantic", "gitvow.policy.load"} <= set(json.loads(done.stdout))
