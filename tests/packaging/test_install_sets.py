"""What each install set holds, and what the core must never pull in.

tox sets ``GITVOW_INSTALL_SET`` per environment (core, proxy, gate, one forge plugin, all);
each environment is a fresh virtualenv with the packages installed as users install them,
so these tests pin that ``pip install gitvow gitvow-github`` brings no mitmproxy and that the
core imports no enforcement point. Outside tox the set-specific checks skip.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

INSTALL_SET = os.environ.get("GITVOW_INSTALL_SET")
ENFORCEMENT = ("gitvow-proxy", "gitvow-gate", "gitvow-sandbox")
#: install set → distributions that must be installed
EXPECTED: dict[str, set[str]] = {
    "core": {"gitvow"},
    "proxy": {"gitvow", "gitvow-proxy", "gitvow-gitsmart", "gitvow-github", "gitvow-gitlab", "gitvow-gitea",
              "gitvow-bitbucket", "mitmproxy"},
    "gate": {"gitvow", "gitvow-gate", "gitvow-gitsmart", "gitvow-github"},
    "sandbox": {"gitvow", "gitvow-sandbox", "gitvow-proxy", "gitvow-gitsmart", "gitvow-github", "mitmproxy"},
    "gitsmart": {"gitvow", "gitvow-gitsmart"},
    "github": {"gitvow", "gitvow-gitsmart", "gitvow-github"},
    "gitlab": {"gitvow", "gitvow-gitsmart", "gitvow-gitlab"},
    "linear": {"gitvow", "gitvow-linear"},
    "gitea": {"gitvow", "gitvow-gitsmart", "gitvow-gitea"},
    "bitbucket": {"gitvow", "gitvow-gitsmart", "gitvow-bitbucket"},
    "all": {"gitvow", *ENFORCEMENT, "gitvow-gitsmart", "gitvow-github", "gitvow-gitlab", "gitvow-linear",
            "gitvow-gitea", "gitvow-bitbucket", "mitmproxy"},
}
ALL_OURS = {"gitvow-proxy", "gitvow-gate", "gitvow-sandbox", "gitvow-gitsmart", "gitvow-github", "gitvow-gitlab",
            "gitvow-linear", "gitvow-gitea", "gitvow-bitbucket"}


def installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


@pytest.mark.skipif(INSTALL_SET is None, reason="GITVOW_INSTALL_SET is set by tox")
def test_the_environment_holds_exactly_its_install_set() -> None:
    assert INSTALL_SET in EXPECTED
    expected = EXPECTED[INSTALL_SET]
    assert {name for name in expected if not installed(name)} == set()
    assert {name for name in ALL_OURS - expected if installed(name)} == set()
    assert metadata.version("gitvow").startswith("1."), "PyPI's unrelated gitvow 0.42 stood in for the core"


@pytest.mark.skipif(INSTALL_SET is None, reason="GITVOW_INSTALL_SET is set by tox")
def test_only_the_proxy_brings_mitmproxy() -> None:
    assert installed("mitmproxy") == (INSTALL_SET in ("proxy", "sandbox", "all"))


def test_the_core_imports_no_enforcement_point() -> None:
    result = run_python("""
        import sys
        import gitvow.pipeline, gitvow.evaluator, gitvow.policy.load, gitvow.policy.compile
        import gitvow.plugins, gitvow.contract, gitvow.cli.explain, gitvow.cli.policy
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("gitvow_proxy", "gitvow_gate", "gitvow_sandbox", "mitmproxy"))
        print(",".join(bad))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_discovering_plugins_imports_no_enforcement_point_machinery() -> None:
    """Plugin discovery (on the agent hook's forge path) loads the enforcement points' plugin
    modules only: neither mitmproxy nor pydantic comes with them."""
    result = run_python("""
        import sys
        from gitvow.plugins import installed
        found = installed()
        found.adapters, found.relays
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("mitmproxy", "pydantic"))
        heavy += sorted(m for m in sys.modules if m.startswith(("gitvow_proxy.", "gitvow_gate.", "gitvow_sandbox."))
                        and not m.endswith(".plugin"))
        print(",".join(heavy))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


HIDE = """
    import importlib.abc, sys
    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {hidden!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None
    sys.meta_path.insert(0, Hide())
    from gitvow.cli.main import main
    sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize(("command", "package", "distribution"), [
    (["proxy", "--policy", "p.toml"], "gitvow_proxy", "gitvow-proxy"),
    (["env", "--policy", "p.toml", "--agent", "a"], "gitvow_proxy", "gitvow-proxy"),
    (["hook", "--agent", "claude", "PreToolUse"], "gitvow_gate", "gitvow-gate"),
    (["check", "--", "ls"], "gitvow_gate", "gitvow-gate"),
    (["run", "--agent", "a", "--", "true"], "gitvow_sandbox", "gitvow-sandbox"),
])
def test_a_command_of_a_missing_enforcement_point_names_its_distribution(
    command: list[str], package: str, distribution: str
) -> None:
    result = run_python(HIDE.format(hidden=(package,), argv=command))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"`gitvow {command[0]}` is part of {distribution}, which is not installed" in lines[0]
    assert f'pip install "{distribution}>=1"' in lines[0]  # pinned: never PyPI's unrelated gitvow 0.42


def test_policy_check_names_the_distribution_of_a_section_that_is_not_installed(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[agents.bot]\nmode = "issues_only"\n[budget]\nwrites = 5\n[proxy]\nlisten_port = 9000\n')
    hide = ("gitvow_proxy",)
    code = f"""
        import importlib.metadata as md, sys
        real = md.entry_points
        def entry_points(**kw):
            eps = real(**kw)
            return md.EntryPoints(ep for ep in eps if not ep.value.startswith({hide!r}))
        md.entry_points = entry_points
        from gitvow.cli.main import main
        sys.exit(main(["policy", "check", {str(policy)!r}]))
    """
    result = run_python(code)
    assert result.returncode == 1
    line = result.stderr.strip()
    assert str(policy) in line
    assert "budget: read by gitvow-proxy, which is not installed" in line
    assert "proxy: read by gitvow-proxy" in line
    assert 'pip install "gitvow-proxy>=1"' in line


def test_policy_check_names_a_typo_as_a_typo(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[agentz.bot]\nmode = "issues_only"\n')
    result = run_python(f"""
        import sys
        from gitvow.cli.main import main
        sys.exit(main(["policy", "check", {str(policy)!r}]))
    """)
    assert result.returncode == 1
    assert "agentz: unknown key (typo?)" in result.stderr


@pytest.mark.skipif(not all(installed(name) for name in ENFORCEMENT), reason="needs every enforcement point")
def test_the_first_party_table_is_what_the_enforcement_points_register() -> None:
    """``gitvow.first_party`` (what a missing enforcement point would add) is data; it must be
    exactly what the installed distributions register, policy keys and commands alike."""
    from gitvow.first_party import FIRST_PARTY
    from gitvow.plugins import load

    found = load()
    keys: dict[str, set[str]] = {dist: set() for dist in FIRST_PARTY}
    for section in found.sections:
        keys.setdefault(section.distribution, set()).update(section.keys)
    commands: dict[str, set[str]] = {dist: set() for dist in FIRST_PARTY}
    for name in found.commands:
        commands.setdefault(found.distribution_of(found.command_plugin[name]) or "", set()).add(name)
    assert {dist: set(k) for dist, (_extra, k, _c) in FIRST_PARTY.items()} == {dist: keys[dist] for dist in FIRST_PARTY}
    assert {dist: set(c) for dist, (_extra, _k, c) in FIRST_PARTY.items()} == {
        dist: commands[dist] for dist in FIRST_PARTY}
