"""Benchmark: the agent's hook end to end, warm (the gate server up) and cold, against gitvow 0.42's, same run.

    python benchmarks/bench_hook.py [--runs 40] [--old-venv DIR] [--ours-venv DIR] [--reinstall] [--callgrind]

Each side is installed the way a user installs it, into its own virtualenv on first use
(both distributions are named ``gitvow`` and cannot share one): the existing tool from PyPI
(``gitvow==0.42.0``, ``--old-venv``, default ``~/.cache/gitvow-bench/venv-0.42``) and this
checkout's ``core``, ``enforcement/gitvow-gate``, ``plugins/gitvow-gitsmart`` and
``plugins/gitvow-github`` as wheels (``--ours-venv``, default ``~/.cache/gitvow-bench/venv-ours``,
rebuilt with ``--reinstall``). ``--ours CMD`` measures another ``gitvow-hook`` instead (an
editable install, say).

Every line times the process the agent starts, from its start to its exit, with a Claude
Code ``PreToolUse`` payload on stdin, in scratch git repositories, with a fresh ``HOME``; the
commands run alternately, so load on the machine hits them alike, each warmed up first:

- ``python -I -S -c pass`` of our virtualenv: the start of a bare interpreter, the floor of
  any Python hook;
- ``python -c 'import socket'``: the interpreter with ``site`` and the standard library's
  ``socket`` module, the floor of a client that talks to a server through public modules;
- the installed hook, warm: the command ``gitvow install`` writes, ``python -I -S -c …``
  (:func:`gitvow_gate.hook_client.command_line`), with the gate server up
  (``$XDG_RUNTIME_DIR`` in the scratch directory), for ``ls -la`` and for ``gh pr merge 3`` in
  a repository whose policy has ``[agents.claude]`` (the forge stage). Goal: median ≤ 1.6× the
  bare interpreter's;
- ``gitvow-hook``, warm: the console script (``site`` and pip's template, which imports ``re``)
  running the same client, for other callers;
- ``gitvow-hook``, cold: ``GITVOW_GATE_SERVER=off``, the decision made in the hook's own
  process, as when no server is up (its policy cache and plugin index warm), for the same
  commands; and gitvow 0.42's ``gitvow hook`` on ``ls -la``. Goal: cold plain ≤ 0.40× of 0.42.

Reported: median and 90th percentile wall time per call, CPU time (user + system, less
sensitive than wall time to other load on the machine), and the ratios of the goals. With
``--callgrind``, also the instructions each warm client process and the bare interpreter
execute (``valgrind --tool=callgrind``, one run each, the server native): a count that load on
the machine does not change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
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


def our_hook(given: str | None, venv: Path, reinstall: bool) -> str:
    if given:
        return given
    exe = venv / "bin" / "gitvow-hook"
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


def installed_command(ours: str) -> list[str]:
    """The hook command ``gitvow install`` writes for the installation of ``ours``, as an argv."""
    python = str(Path(ours).parent / "python")
    line = subprocess.run([python, "-c", "import os, sys, gitvow_gate\n"
                           "from gitvow_gate.hook_client import command_line\n"
                           "print(command_line(os.path.join(os.path.dirname(sys.executable), 'python'),"
                           " os.path.dirname(os.path.dirname(gitvow_gate.__file__))))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return shlex.split(line)


def instructions(argv: list[str], payload: str, cwd: Path, env: dict[str, str]) -> int:
    """The instructions the process executes, counted by callgrind (its children not traced)."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], input=payload,
                          capture_output=True, text=True, cwd=cwd, env=env, check=False)
    found = re.search(r"refs:\s+([\d,]+)", done.stderr)
    if not found:
        sys.exit(f"callgrind gave no count for {argv[:3]}: {done.stderr[-300:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--old-venv", type=Path, default=Path.home() / ".cache" / "gitvow-bench" / "venv-0.42")
    parser.add_argument("--ours-venv", type=Path, default=Path.home() / ".cache" / "gitvow-bench" / "venv-ours")
    parser.add_argument("--reinstall", action="store_true", help="reinstall this checkout into --ours-venv")
    parser.add_argument("--ours", default=None, help="measure this gitvow-hook command instead")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions with valgrind")
    args = parser.parse_args()

    old = old_gitvow(args.old_venv)
    ours = our_hook(args.ours, args.ours_venv, args.reinstall)
    python = str(Path(ours).parent / "python")
    installed = installed_command(ours)
    with tempfile.TemporaryDirectory(prefix="gitvow-bench-") as scratch:
        root = Path(scratch)
        repo, home, run = root / "repo", root / "home", root / "run"
        repo.mkdir()
        home.mkdir()
        run.mkdir(mode=0o700)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        forge_repo = root / "forge-repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(forge_repo)], check=True)
        (forge_repo / ".gitvow").mkdir()
        (forge_repo / ".gitvow" / "policy.toml").write_text('[agents.claude]\nmode = "issues_and_prs"\n')
        # as on a user's machine: bytecode may be written (the warm-up runs write any that is missing)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITVOW") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(home), GITVOW_CACHE_DIR=str(root / "cache"), GITVOW_HOME=str(root / "gitvow"),
                   XDG_RUNTIME_DIR=str(run))
        warm_env = {**env, "GITVOW_GATE_SERVER": "on", "GITVOW_GATE_IDLE": "300"}
        cold_env = {**env, "GITVOW_GATE_SERVER": "off"}

        def claude(command: str, cwd: Path) -> str:
            return json.dumps({
                "session_id": "bench", "transcript_path": "", "cwd": str(cwd), "permission_mode": "default",
                "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            })

        hook = ["--agent", "claude", "PreToolUse"]
        plain, merge = claude("ls -la", repo), claude("gh pr merge 3", forge_repo)
        commands: dict[str, tuple[list[str], str, Path, dict[str, str]]] = {
            "python -I -S -c pass": ([python, "-I", "-S", "-c", "pass"], "", repo, env),
            # the floor of a client that uses the standard library's public socket module
            "python -c 'import socket'": ([python, "-c", "import socket"], "", repo, env),
            "warm, ls -la": ([*installed, *hook], plain, repo, warm_env),
            "warm, gh pr merge 3": ([*installed, *hook], merge, forge_repo, warm_env),
            "warm gitvow-hook, ls -la": ([ours, *hook], plain, repo, warm_env),
            "warm gitvow-hook, gh pr merge 3": ([ours, *hook], merge, forge_repo, warm_env),
            "cold, ls -la": ([ours, *hook], plain, repo, cold_env),
            "cold, gh pr merge 3": ([ours, *hook], merge, forge_repo, cold_env),
            "gitvow 0.42, ls -la": ([str(old), "hook", "--agent", "claude", "PreToolUse"], plain, repo, env),
        }
        try:
            for name, (argv, stdin, cwd, call_env) in commands.items():
                for _ in range(3):
                    _, _, code, output = time_call(argv, stdin, cwd, call_env)
                    time.sleep(0.5 if name.startswith("warm") else 0)  # the first call starts the server
                if code != 0:
                    sys.exit(f"{name} did not answer (exit {code}): {output[:300]}")
            samples: dict[str, list[float]] = {name: [] for name in commands}
            cpu: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, (argv, stdin, cwd, call_env) in commands.items():
                    wall, used, _, _ = time_call(argv, stdin, cwd, call_env)
                    samples[name].append(wall)
                    cpu[name].append(used)
            counted: dict[str, int] = {}
            if args.callgrind and shutil.which("valgrind"):
                for name in ("python -I -S -c pass", "warm, ls -la", "warm, gh pr merge 3", "warm gitvow-hook, ls -la"):
                    argv, stdin, cwd, call_env = commands[name]
                    counted[name] = instructions(argv, stdin, cwd, call_env)
        finally:
            subprocess.run([ours, "--stop"], env=warm_env, capture_output=True, check=False)
    figures = {
        name: {"median_ms": statistics.median(s) * 1000, "p90_ms": sorted(s)[int(0.9 * (len(s) - 1))] * 1000,
               "cpu_median_ms": statistics.median(cpu[name]) * 1000}
        for name, s in samples.items()
    }

    def ratio(name: str, base: str) -> float:
        return figures[name]["median_ms"] / figures[base]["median_ms"]

    bare, old_plain = "python -I -S -c pass", "gitvow 0.42, ls -la"
    ratios = {
        "warm, ls -la / bare interpreter (goal <= 1.6)": ratio("warm, ls -la", bare),
        "warm, gh pr merge 3 / bare interpreter (goal <= 1.6)": ratio("warm, gh pr merge 3", bare),
        "cold, ls -la / gitvow 0.42 (goal <= 0.40)": ratio("cold, ls -la", old_plain),
        "cold, gh pr merge 3 / gitvow 0.42": ratio("cold, gh pr merge 3", old_plain),
    }
    for name, count in counted.items():
        ratios[f"instructions, {name} / bare interpreter"] = count / counted["python -I -S -c pass"]
    if args.json:
        print(json.dumps({"runs": args.runs, "figures": figures, "ratios": ratios, "instructions": counted},
                         indent=2))
        return 0
    print(f"the agent's hook process, start to exit, {args.runs} runs each, alternating")
    for name, f in figures.items():
        print(f"  {name:32} median {f['median_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms   "
              f"cpu median {f['cpu_median_ms']:6.1f} ms")
    for name, count in counted.items():
        print(f"  instructions (callgrind), {name:32} {count / 1e6:7.1f} M")
    for name, value in ratios.items():
        print(f"  {name}: {value:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
