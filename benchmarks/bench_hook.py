"""Benchmark: ``gitvow hook`` on a plain and on forge commands, against the gitvow 0.42 hook, same run.

    python benchmarks/bench_hook.py [--runs 40] [--old-venv DIR] [--ours GITVOW]

Each side is installed the way a user installs it, into its own virtualenv on first use
(both distributions are named ``gitvow`` and cannot share one): the existing tool from PyPI
(``gitvow==0.42.0``, ``--old-venv``, default ``~/.cache/gitvow-bench/venv-0.42``) and this
checkout's ``core``, ``enforcement/gitvow-gate``, ``plugins/gitvow-gitsmart`` and
``plugins/gitvow-github`` as wheels (``--ours-venv``, default ``~/.cache/gitvow-bench/venv-ours``,
rebuilt with ``--reinstall``). ``--ours CMD`` measures another ``gitvow`` command instead (an
editable install, say).

Both hooks get the same Claude Code ``PreToolUse`` payload for ``ls -la`` on stdin, in the
same scratch git repository, with the same fresh ``HOME`` and their packaged default policy,
run alternately so load on the machine hits both alike. Each is warmed up first (bytecode,
our policy cache). Reported: median and 90th percentile wall time per hook call, and the
ratio ours / old (goal: at most 0.5), and CPU time per call (user + system, less sensitive
than wall time to other load on the machine).

Two more lines time this gitvow on forge commands, ``git push origin feature`` and ``gh pr
merge 3``, in a repository whose policy has ``[agents.claude]``: the forge stage, which
loads the one adapter the program needs from the cached plugin index (the old tool has no
such stage; its figure for the same commands is its plain figure). Goals: plain command
≤ 25 ms median, forge command ≤ 40 ms median.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    ours = [str(root / "core"), str(root / "enforcement" / "gitvow-gate"), str(root / "plugins" / "gitvow-gitsmart"),
            str(root / "plugins" / "gitvow-github")]
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    "--force-reinstall", "--no-deps", *ours], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", *ours], check=True)
    return str(exe)


def time_call(argv: list[str], payload: str, cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall time, CPU time (user + system of the hook process), exit status and output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, input=payload, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.returncode, done.stdout + done.stderr


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
        def forge_payload(command: str) -> str:
            return json.dumps({
                "session_id": "bench", "cwd": str(forge_repo), "permission_mode": "default",
                "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            })

        hook = ["hook", "--agent", "claude", "PreToolUse"]
        commands = {
            "gitvow 0.42": ([str(old), *hook], payload, repo),
            "gitvow (this)": ([ours, *hook], payload, repo),
            "this, git push": ([ours, *hook], forge_payload("git push origin feature"), forge_repo),
            "this, gh pr merge": ([ours, *hook], forge_payload("gh pr merge 3"), forge_repo),
        }
        for name, (argv, stdin, cwd) in commands.items():
            for _ in range(3):
                _, _, code, output = time_call(argv, stdin, cwd, env)
            if code != 0:
                sys.exit(f"{name} did not answer (exit {code}): {output[:300]}")
        samples: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv, stdin, cwd) in commands.items():
                wall, used, _, _ = time_call(argv, stdin, cwd, env)
                samples[name].append(wall)
                cpu[name].append(used)
    figures = {
        name: {"median_ms": statistics.median(s) * 1000, "p90_ms": sorted(s)[int(0.9 * (len(s) - 1))] * 1000,
               "cpu_median_ms": statistics.median(cpu[name]) * 1000}
        for name, s in samples.items()
    }
    ratio = figures["gitvow (this)"]["median_ms"] / figures["gitvow 0.42"]["median_ms"]
    if args.json:
        print(json.dumps({"runs": args.runs, "figures": figures, "ratio": ratio}, indent=2))
        return 0
    print(f"hook on a plain shell command (`ls -la`), {args.runs} runs each, alternating;")
    print("'this, git push' / 'this, gh pr merge' run with [agents.claude] (the forge stage: one adapter loaded)")
    for name, f in figures.items():
        print(f"  {name:18} median {f['median_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms   "
              f"cpu median {f['cpu_median_ms']:6.1f} ms")
    print(f"  ratio this / 0.42: {ratio:.2f} (goal <= 0.50); goals: plain <= 25 ms, forge <= 40 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
