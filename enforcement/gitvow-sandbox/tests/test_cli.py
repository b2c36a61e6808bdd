"""``gitvow run``'s one-line answers when it cannot run the command, as a user meets them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def _gitvow(argv: list[str], tmp_path: Path, hidden: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(HIDE.format(hidden=hidden, argv=argv))], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.e2e
def test_no_proxy_and_no_gitvow_proxy_to_start_one_is_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[agents.bot]\nmode = "issues_only"\nsecret_env = "BOT_SECRET"\n')
    marker = tmp_path / "ran"
    result = _gitvow(["run", "--agent", "bot", "--policy", str(policy), "--", "touch", str(marker)], tmp_path,
                     hidden=("gitvow_proxy",))
    assert result.returncode == 125
    assert result.stderr.strip().splitlines() == [
        "gitvow run: no proxy is running and gitvow-proxy is not installed to start one: pip install gitvow-proxy "
        '(or pip install "gitvow-sandbox[proxy]"), or pass --proxy URL']
    assert not marker.exists()


def test_a_bad_sandbox_section_names_the_file_and_key(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[sandbox]\nhide = ["relative/path"]\n')
    result = _gitvow(["run", "--agent", "bot", "--policy", str(policy), "--", "true"], tmp_path)
    if "bubblewrap" in result.stderr or "socat" in result.stderr:
        pytest.skip("bubblewrap or socat is not installed")
    assert result.returncode == 125
    (line,) = result.stderr.strip().splitlines()
    assert str(policy) in line and "sandbox.hide" in line and "absolute" in line


def test_no_command_is_a_usage_error(tmp_path: Path) -> None:
    result = _gitvow(["run", "--agent", "bot", "--policy", "p.toml"], tmp_path)
    assert result.returncode == 2
    assert "name the command to run after --" in result.stderr
