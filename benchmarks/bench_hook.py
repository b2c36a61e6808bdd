"""Benchmark: ``gitvow hook`` on a plain shell command, against the gitvow 0.42 hook, same run.

    python benchmarks/bench_hook.py [--runs 40] [--old-venv DIR] [--ours GITVOW]

Each side is installed the way a user installs it, into its own virtualenv on first use
(both distributions are named ``gitvow`` and cannot share one): the existing tool from PyPI
(``gitvow==0.42.0``, ``--old-venv``, default ``~/.cache/gitvow-bench/venv-0.42``) and this
checkout's ``core`` and ``plugins/gitvow-gitsmart`` as wheels (``--ours-venv``, default
``~/.cache/gitvow-bench/venv-ours``, rebuilt with ``--reinstall``). ``--ours CMD`` measures
another ``gitvow`` command instead (an editable install, say).

Both hooks get the same Claude Code ``PreToolUse`` payload for ``ls -la`` on stdin, in the
same scratch git repository, with the same fresh ``HOME`` and their packaged default policy,
run alternately so load on the machine hits both alike. Each is warmed up first (bytecode,
our policy cache). Reported: median and 90th percentile wall time per hook call, and the
ratio ours / old (goal: at most 0.5).

A third line times this gitvow on ``git push origin feature`` in a repository whose policy
has ``[agents.claude]``: the forge stage, which loads the plugins
(the old tool has no such stage, so it has no counterpart).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD_VERSION = "0.42.0"


def old_gitvow(venv: Path) -> Path:
    exe = venv / "bin" / "gitvow"
    if exe.exists():
        return exe
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    f"gitvow=={OLD_VERSION}"], check=True)
    return exe


def our_gitvow(given: str | None, venv: Path, reinstall: bool) -> str:
    if given:
        return given
    exe = venv / "bin" / "gitvow"
    if exe.exists() and not reinstall:
        return str(exe)
    root = Path(__file__).resolve().parent.parent
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    "--force-reinstall", "--no-deps", str(root / "core"), str(root / "plugins" / "gitvow-gitsmart")],
                   check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    str(root / "core"), str(root / "plugins" / "gitvow-gitsmart")], check=True)
    return str(exe)


def time_call(argv: list[str], payload: str, cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, input=payload, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    return time.perf_counter() - start, done.returncode, done.stdout + done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--old-venv", type=Path, default=Path.home() / ".cache" / "gitvow-bench" / "venv-0.42")
    parser.add_argument("--ours-venv", type=Path, default=Path.home() / ".cache" / "gitvow-bench" / "venv-ours")
    parser.add_argument("--reinstall", action="store_true", help="reinstall this checkout into --ours-venv")
    parser.add_argument("--ours", default=None, help="measure this gitvow command instead")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    old = old_gitvow(args.old_venv)
    ours = our_gitvow(args.ours, args.ours_venv, args.reinstall)
    with tempfile.TemporaryDirectory(prefix="gitvow-bench-") as scratch:
        root = Path(scratch)
        repo, home = root / "repo", root / "home"
        repo.mkdir()
        home.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        forge_repo = root / "forge-repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(forge_repo)], check=True)
        (forge_repo / ".gitvow").mkdir()
        (forge_repo / ".gitvow" / "policy.toml").write_text('[agents.claude]\nmode = "issues_and_prs"\n')
        # as on a user's machine: bytecode may be written (the warm-up runs write any that is missing)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(home), GITVOW_CACHE_DIR=str(root / "cache"), GITVOW_HOME=str(root / "gitvow"))
        payload = json.dumps({
            "session_id": "bench", "transcript_path": "", "cwd": str(repo), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la"},
        })
        forge_payload = json.dumps({
            "session_id": "bench", "cwd": str(forge_repo), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "git push origin feature"},
        })
        hook = ["hook", "--agent", "claude", "PreToolUse"]
        commands = {
            "gitvow 0.42": ([str(old), *hook], payload, repo),
            "gitvow (this)": ([ours, *hook], payload, repo),
            "this, forge": ([ours, *hook], forge_payload, forge_repo),
        }
        for name, (argv, stdin, cwd) in commands.items():
            for _ in range(3):
                _, code, output = time_call(argv, stdin, cwd, env)
            if code != 0:
                sys.exit(f"{name} did not allow its command (exit {code}): {output[:300]}")
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv, stdin, cwd) in commands.items():
                samples[name].append(time_call(argv, stdin, cwd, env)[0])
    figures = {
        name: {"median_ms": statistics.median(s) * 1000, "p90_ms": sorted(s)[int(0.9 * (len(s) - 1))] * 1000}
        for name, s in samples.items()
    }
    ratio = figures["gitvow (this)"]["median_ms"] / figures["gitvow 0.42"]["median_ms"]
    if args.json:
        print(json.dumps({"runs": args.runs, "figures": figures, "ratio": ratio}, indent=2))
        return 0
    print(f"hook on a plain shell command (`ls -la`), {args.runs} runs each, alternating;")
    print("'this, forge' is `git push origin feature` with [agents.claude] (the forge stage: plugins loaded)")
    for name, f in figures.items():
        print(f"  {name:14} median {f['median_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms")
    print(f"  ratio this / 0.42: {ratio:.2f} (goal <= 0.50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
