"""The sandbox's file-system plan: what is writable, what is hidden, in which order (no bubblewrap needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitvow_sandbox.layout import LayoutError, mount_arguments, plan, proxy_files


def _binds(args: list[str]) -> list[tuple[str, str]]:
    """(option, target) pairs, in order."""
    out = []
    i = 0
    while i < len(args):
        option = args[i]
        if option in ("--bind", "--ro-bind"):
            out.append((option, args[i + 2]))
            i += 3
        else:
            out.append((option, args[i + 1]))
            i += 2
    return out


def test_hidden_paths_come_after_the_binds_that_would_show_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".git-credentials").write_text("secret")
    real_gh = tmp_path / "elsewhere" / "gh"
    real_gh.mkdir(parents=True)
    (home / ".config").mkdir()
    (home / ".config" / "gh").symlink_to(real_gh)  # hidden at its target too
    tree = home / "src" / "app"
    (tree / ".git").mkdir(parents=True)
    (tree / ".git" / "config").write_text("[core]\n")
    policy = tree / "policy.toml"
    policy.write_text("")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    layout = plan(cwd=tree, home=home, run_dir=run_dir, allow_write=[home], allow_read=[real_gh.parent], hide=[policy])
    binds = _binds(mount_arguments(layout))
    order = {pair: i for i, pair in enumerate(binds)}
    assert binds[0] == ("--ro-bind", "/")
    assert order[("--bind", str(home))] < order[("--tmpfs", str(home / ".ssh"))]
    assert order[("--bind", str(tree))] < order[("--ro-bind", str(policy))]
    assert ("--ro-bind", str(home / ".git-credentials")) in order
    assert ("--tmpfs", str(real_gh)) in order
    assert order[("--bind", str(tree))] < order[("--ro-bind", str(tree / ".git" / "hooks"))]
    assert (tree / ".git" / "hooks").is_dir()  # made, so the agent cannot be the one to make it
    assert binds[-1] == ("--ro-bind", "/run/gitvow")


@pytest.mark.parametrize("where", ["home", "root"])
def test_a_working_tree_holding_the_home_is_refused(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cwd = home if where == "home" else Path("/")
    with pytest.raises(LayoutError, match="holds your home directory"):
        plan(cwd=cwd, home=home, run_dir=tmp_path)


def test_the_proxys_files_named_by_the_policy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = {
        "credentials": {"github": {"token_file": "~/tokens/github"}},
        "agents": {"bot": {"secret_file": "/srv/secrets/bot"}},
        "proxy": {"state": "/var/lib/gitvow/state.sqlite"},
        "audit": {"path": "-"},
    }
    files = proxy_files(data, tmp_path / "policy.toml", home)
    assert tmp_path / "policy.toml" in files
    assert home / "tokens" / "github" in files and Path("/srv/secrets/bot") in files
    assert Path("/var/lib/gitvow/state.sqlite-wal") in files
    assert home / ".local/share/gitvow/mitmproxy" in files  # the CA's key, at its default place
    assert not any(str(p) == "-" for p in files)
