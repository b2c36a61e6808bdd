"""Commands come from plugins (``register_commands``), found by discovery on every run.

Each test runs ``gitvow`` as a subprocess, with a plugin given by an entry point of a
throwaway distribution on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = '''
from gitvow.cli.command import Command
from gitvow.hookspecs import hookimpl


@hookimpl
def register_commands(register):
    register(Command("greet", "greet_cli", "say hello"))
    register(Command("count", "greet_cli", "count the arguments"))
'''

CLI = '''


def add_parser(parser):
    parser.add_argument("words", nargs="*")


def run(args):
    print("slow", len(args.words))
    return 0
'''


def site(tmp_path: Path) -> Path:
    """A directory holding a plugin module, its command module and a dist-info naming its entry point."""
    where = tmp_path / "site"
    where.mkdir()
    (where / "greet_plugin.py").write_text(PLUGIN)
    (where / "greet_cli.py").write_text(CLI)
    info = where / "gitvow_greet-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gitvow-greet\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[gitvow]\ngreet = greet_plugin\n")
    return where


def gitvow(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path[1:]]),
           "GITVOW_CACHE_DIR": str(tmp_path / "cache")}
    code = "import sys\nfrom gitvow.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=120)


def test_a_plugin_command_runs_and_is_listed_with_its_distribution(tmp_path: Path) -> None:
    site(tmp_path)
    listed = gitvow(tmp_path, "--help")
    assert listed.returncode == 0, listed.stderr
    assert "say hello [gitvow-greet]" in " ".join(listed.stdout.split())
    counted = gitvow(tmp_path, "count", "a", "b")
    assert (counted.returncode, counted.stdout) == (0, "slow 2\n"), counted.stderr


def test_a_command_that_discovery_no_longer_finds_is_not_run(tmp_path: Path) -> None:
    """No index remembers a plugin's command: a plugin that breaks takes its commands with it."""
    site(tmp_path)
    assert gitvow(tmp_path, "count", "a").stdout == "slow 1\n"
    (tmp_path / "site" / "greet_plugin.py").write_text("raise ImportError('broken')\n")
    broken = gitvow(tmp_path, "count", "a")
    assert broken.returncode == 2 and "invalid choice: 'count'" in broken.stderr, broken.stderr


def test_a_first_party_command_that_is_not_installed_says_what_to_install(tmp_path: Path) -> None:
    site(tmp_path)
    hide = textwrap.dedent("""
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "gitvow_sandbox":
                    raise ModuleNotFoundError(name, name=name)
        sys.meta_path.insert(0, Hide())
        from gitvow.cli.main import main
        sys.exit(main(["run", "--", "true"]))
    """)
    env = {**os.environ, "GITVOW_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == ('gitvow: error: `gitvow run` is part of gitvow-sandbox, which is not installed: '
                                     'pip install "gitvow-sandbox>=1" (or pip install "gitvow[sandbox]>=1")')
