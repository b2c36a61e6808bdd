"""``gitvow run`` with real bubblewrap, socat, git, gh and sshd, all on loopback.

Every target is a loopback port of this machine, so a broken sandbox still reaches nothing
else: the forge stand-in, a plain TCP listener, an ``sshd`` and the proxy's admin listener
all listen on 127.0.0.1 outside the sandbox, and each test first shows it is reachable from
outside before showing it is not from inside.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from sandbox_support import GITVOW, PYTHON, gitvow_run, python_inside

from gitvow.testing import wait_for_port

pytest.importorskip("gitvow_proxy", reason="the sandbox's end-to-end tests go through gitvow-proxy")
pytest.importorskip("gitvow_github", reason="the forge stand-in is mapped to the GitHub adapter")

import contextlib

from proxy_support import (
    GIT_TOKEN,
    RESOLVE_ADDON,
    ProxyProcess,
    Upstream,
    api_reply,
    free_port,
    git,
    make_bare_repo,
    start_proxy,
    start_upstream,
)

pytestmark = pytest.mark.e2e

HOST = "ghes.test"
INDEX = "pypi.test"  # a package index stand-in no adapter serves: allowed in [egress]
ELSEWHERE = "elsewhere.test"  # a host no adapter serves and [egress] does not allow
CODER_SECRET = "coder-sandbox-secret-7"
OPERATOR_TOKEN = "ghp_operatorsowntoken0123456789"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ca") / "upstream-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture(scope="module")
def forge(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    root = tmp_path_factory.mktemp("forge-root")
    make_bare_repo(root, "team/app", tmp_path_factory.mktemp("seed"))
    server = start_upstream(ca, root, names=(HOST,))
    server.routes["/api/"] = api_reply
    yield server
    server.server.shutdown()


def policy_text(workdir: Path, forge: Upstream, ca_file: Path, extra: str = "", listen_port: int = 8080) -> str:
    return textwrap.dedent(f"""
        [hosts]
        "{HOST}:{forge.port}" = "github"
        "127.0.0.1:{forge.port}" = "github"

        [credentials.github]
        token_file = "{workdir / 'github-token'}"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"
        confdir = "{workdir / 'confdir'}"
        listen_port = {listen_port}

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [egress]
        allow = ["{INDEX}"]
        internal = ["{INDEX}"]

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
    """) + textwrap.dedent(extra)


@pytest.fixture(scope="module")
def admin_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def proxy(forge: Upstream, ca_file: Path, admin_port: int, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("proxy")
    (workdir / "github-token").write_text(GIT_TOKEN)
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(policy_text(workdir, forge, ca_file, f'[admin]\nlisten = "127.0.0.1:{admin_port}"\n'))
    running = start_proxy(policy, workdir, {"GITVOW_TEST_CODER": CODER_SECRET,
                                            "GITVOW_TEST_RESOLVE": f"{HOST},{INDEX},{ELSEWHERE}"},
                          extra=[f"scripts={resolve}"])
    wait_for_port(admin_port, running.proc)  # the admin listener starts after the proxy's own
    yield running
    assert running.stop() == 0, running.log_text()


@pytest.fixture
def operator(tmp_path: Path) -> Path:
    """The operator's home: an SSH key, gh's login, git credentials; the project lives under it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("OPERATOR-SSH-KEY\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text(f"github.com:\n  oauth_token: {OPERATOR_TOKEN}\n")
    (home / ".git-credentials").write_text(f"https://me:{OPERATOR_TOKEN}@github.com\n")
    project = home / "src" / "project"
    project.mkdir(parents=True)
    git("init", "-q", "-b", "main", str(project), cwd=project)
    return home


def run_in(proxy: ProxyProcess, operator: Path, command: list[str], *extra: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return gitvow_run(["--agent", "coder", "--policy", str(proxy.policy), "--proxy", proxy.url(), *extra, "--",
                       *command], home=operator, cwd=operator / "src" / "project",
                      env={"GITVOW_TEST_CODER": CODER_SECRET, "GITHUB_TOKEN": OPERATOR_TOKEN, **(env or {})})


def outside_connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def connect_inside(proxy: ProxyProcess, operator: Path, port: int) -> str:
    result = run_in(proxy, operator, [*python_inside(CONNECT), str(port)])
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# -- the way out: the proxy, with the token injected ------------------------------------------

def test_gh_api_reaches_the_forge_through_the_proxy_with_the_injected_token(
        proxy: ProxyProcess, forge: Upstream, operator: Path) -> None:
    import shutil

    if shutil.which("gh") is None:
        pytest.skip("the gh CLI is not installed (Debian package gh)")
    forge.clear()
    result = run_in(proxy, operator, ["gh", "api", "repos/team/app"], "--pass-env", "GH_HOST",
                    env={"GH_HOST": f"{HOST}:{forge.port}", "GH_PROMPT_DISABLED": "1"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"path": "/api/v3/repos/team/app"}
    (seen,) = [s for s in forge.seen if s.route == "/api/v3/repos/team/app"]
    assert GIT_TOKEN in seen.headers["authorization"]


def test_git_push_reaches_the_forge_through_the_proxy(proxy: ProxyProcess, forge: Upstream, operator: Path) -> None:
    forge.clear()
    script = f"""
        set -e
        git clone -q https://{HOST}:{forge.port}/team/app.git app
        cd app
        git -c user.name=agent -c user.email=agent@example.test commit -q --allow-empty -m "from the sandbox"
        git push -q origin HEAD:refs/heads/from-sandbox
    """
    result = run_in(proxy, operator, ["/bin/sh", "-c", textwrap.dedent(script)])
    assert result.returncode == 0, result.stderr
    pushes = [s for s in forge.seen if s.route.endswith("/git-receive-pack")]
    assert pushes and all(GIT_TOKEN in s.headers.get("authorization", "") or "basic" in
                          s.headers.get("authorization", "").lower() for s in pushes)
    refs = git("ls-remote", str(forge.git_root / "team" / "app.git"), cwd=operator).stdout
    assert "refs/heads/from-sandbox" in refs
    # the clone landed in the working tree, which is writable
    assert (operator / "src" / "project" / "app" / ".git").is_dir()


def test_the_environment_is_the_agents_and_none_of_the_operators(proxy: ProxyProcess, operator: Path) -> None:
    result = run_in(proxy, operator, [*python_inside("import os, json; print(json.dumps(dict(os.environ)))")])
    assert result.returncode == 0, result.stderr
    env = json.loads(result.stdout)
    assert env["HTTPS_PROXY"] == f"http://coder:{CODER_SECRET}@127.0.0.1:3128"
    assert env["SSL_CERT_FILE"] == "/run/gitvow/ca-bundle.pem"
    assert env["GH_TOKEN"] != OPERATOR_TOKEN and env["GITHUB_TOKEN"] == env["GH_TOKEN"]  # the canary
    assert OPERATOR_TOKEN not in result.stdout and GIT_TOKEN not in result.stdout
    assert env["HOME"] == str(operator)
    # the model keys are the proxy's: the agent holds its canary in their place
    assert env["ANTHROPIC_API_KEY"] == env["OPENAI_API_KEY"] == env["GH_TOKEN"]


def test_a_model_key_is_not_passed_in_the_proxy_holds_it(proxy: ProxyProcess, operator: Path) -> None:
    marker = operator / "src" / "project" / "ran"
    result = run_in(proxy, operator, ["touch", str(marker)], "--pass-env", "ANTHROPIC_API_KEY",
                    env={"ANTHROPIC_API_KEY": "sk-ant-operators-own"})
    assert result.returncode == 125
    assert result.stderr.strip() == (
        "gitvow run: ANTHROPIC_API_KEY is not passed into the sandbox: the proxy holds model keys. Put it in the "
        'policy as [credentials.anthropic] token_env = "ANTHROPIC_API_KEY" (the agent gets a placeholder) and drop '
        "it from --pass-env / [sandbox] pass_env")
    assert not marker.exists()


PROC = """
import json, os
seen = {}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("environ", "cmdline"):
            try:
                seen[f"{pid}/{name}"] = open(f"/proc/{pid}/{name}", "rb").read().decode(errors="replace")
            except OSError:
                pass
print(json.dumps(seen))
"""
REVIEWER_SECRET = "reviewer-sandbox-secret-9"


def test_no_process_inside_holds_the_operators_environment(proxy: ProxyProcess, operator: Path) -> None:
    result = run_in(proxy, operator, python_inside(PROC),
                    env={"GITVOW_TEST_REVIEWER": REVIEWER_SECRET, "GITVOW_ADMIN_SECRET": "operator-desk-secret"})
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert "1/environ" in seen and "1/cmdline" in seen  # bubblewrap, pid 1 inside, among them
    assert sum(key.endswith("/environ") for key in seen) >= 3  # pid 1, the shell's socat, this Python
    for key, text in seen.items():
        for secret in (OPERATOR_TOKEN, GIT_TOKEN, REVIEWER_SECRET, "operator-desk-secret", "GITVOW_TEST_CODER"):
            assert secret not in text, f"{secret} in /proc/{key}"
    # the agent's own proxy secret is in its proxy URL, and only there
    assert f"HTTPS_PROXY=http://coder:{CODER_SECRET}@127.0.0.1:3128" in seen["1/environ"].split("\0")


# -- every other way out fails ---------------------------------------------------------------

def test_a_direct_connection_to_the_forges_port_fails(proxy: ProxyProcess, forge: Upstream, operator: Path) -> None:
    assert outside_connects(forge.port)
    assert connect_inside(proxy, operator, forge.port) == "ConnectionRefusedError"


def test_a_raw_tcp_connection_to_another_loopback_port_fails(proxy: ProxyProcess, operator: Path) -> None:
    accepted: list[object] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def accept() -> None:
            listener.settimeout(10)
            with contextlib.suppress(OSError):
                accepted.append(listener.accept())

        assert outside_connects(port)
        listener.accept()[0].close()  # that one was ours, from outside
        thread = threading.Thread(target=accept)
        thread.start()
        outcome = connect_inside(proxy, operator, port)
        listener.close()
        thread.join()
    assert outcome == "ConnectionRefusedError"
    assert accepted == []


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[int]:
    """A real sshd on loopback, outside the sandbox (config, key and pid file in the test's dir)."""
    import shutil

    if not (os.path.exists("/usr/sbin/sshd") and shutil.which("ssh") and os.geteuid() == 0):
        pytest.skip("needs root and openssh-server (Debian packages openssh-server, openssh-client)")
    port = free_port()
    key = tmp_path / "host_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    config = tmp_path / "sshd_config"
    config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nPidFile {tmp_path / 'sshd.pid'}\n"
                      "UsePAM no\nPasswordAuthentication no\n")
    # sshd wants its privilege-separation directory /run/sshd: give it one in a mount namespace
    # of its own (same network), so the test writes nothing outside its directory.
    # --die-with-parent: bwrap's end is sshd's (a terminated bwrap once left its sshd listening).
    proc = subprocess.Popen(["bwrap", "--die-with-parent", "--dev-bind", "/", "/", "--tmpfs", "/run", "--dir",
                             "/run/sshd", "--", "/usr/sbin/sshd", "-f", str(config), "-D", "-e"],
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)  # type: ignore[arg-type]
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        pid_file = tmp_path / "sshd.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)


def test_an_ssh_connection_to_a_loopback_sshd_fails(proxy: ProxyProcess, operator: Path, sshd: int) -> None:
    with socket.create_connection(("127.0.0.1", sshd), timeout=5) as conn:
        assert conn.recv(64).startswith(b"SSH-2.0-")  # it answers outside
    result = run_in(proxy, operator, ["ssh", "-p", str(sshd), "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                      "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                                      "root@127.0.0.1", "true"])
    assert result.returncode == 255
    assert "Connection refused" in result.stderr


RESOLVE = """
import socket, sys
resolv = open("/etc/resolv.conf").read()
if "nameserver" in resolv:
    sys.exit("a name server is configured inside: " + resolv)
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
if interfaces != ["lo"]:
    sys.exit(f"interfaces besides loopback: {interfaces}")
# Only now: no name server and no interface but loopback, so no query can leave the machine.
try:
    print(socket.getaddrinfo("github.com", 443))
except socket.gaierror as exc:
    print("unresolved", exc.errno)
"""


def test_names_cannot_be_resolved(proxy: ProxyProcess, operator: Path) -> None:
    result = run_in(proxy, operator, python_inside(RESOLVE))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("unresolved")


def test_the_admin_listener_is_unreachable(proxy: ProxyProcess, operator: Path, admin_port: int) -> None:
    assert outside_connects(admin_port)
    assert connect_inside(proxy, operator, admin_port) == "ConnectionRefusedError"


# -- files -------------------------------------------------------------------------------------

READ = """
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            print(path, "read", f.read().decode(errors="replace").strip() or "(empty)")
    except OSError as exc:
        print(path, type(exc).__name__)
"""


def test_the_operators_credentials_and_the_proxys_files_are_unreadable(proxy: ProxyProcess, operator: Path) -> None:
    secrets = [operator / ".ssh" / "id_ed25519", operator / ".config" / "gh" / "hosts.yml",
               operator / ".git-credentials", proxy.policy.parent / "github-token", proxy.policy,
               proxy.policy.parent / "state.sqlite", proxy.confdir / "mitmproxy-ca.pem"]
    assert all(p.exists() for p in secrets)
    result = run_in(proxy, operator, [*python_inside(READ), *map(str, secrets)])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(secrets)
    for line in lines:
        assert line.endswith(("FileNotFoundError", "PermissionError", "(empty)")), line
    for needle in ("OPERATOR-SSH-KEY", OPERATOR_TOKEN, GIT_TOKEN, "PRIVATE KEY", "[agents.coder]"):
        assert needle not in result.stdout


WRITE = """
import os, sys
for path in sys.argv[1:]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)  # as an agent planting a hook would
        with open(path, "w") as f:
            f.write("written")
        print(path, "written")
    except OSError as exc:
        print(path, type(exc).__name__)
"""


def test_the_working_tree_is_writable_and_the_rest_is_not(proxy: ProxyProcess, operator: Path, tmp_path: Path
                                                          ) -> None:
    tree = operator / "src" / "project"
    import shutil

    shutil.rmtree(tree / ".git" / "hooks")  # absent: the agent must not be the one to make it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    targets = [tree / "new.txt", tree / ".git" / "hooks" / "post-checkout", tree / ".git" / "config",
               elsewhere / "x.txt", Path(PYTHON).parent / "planted", operator / "planted"]
    result = run_in(proxy, operator, [*python_inside(WRITE), *map(str, targets)])
    assert result.returncode == 0, result.stderr
    outcome = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    assert outcome[str(tree / "new.txt")] == "written"
    assert (tree / "new.txt").read_text() == "written"
    for path in targets[1:3]:  # git outside would run these: the agent must not plant them
        assert outcome[str(path)] != "written"
    assert not (elsewhere / "x.txt").exists()  # /tmp inside is the sandbox's own
    assert not (Path(PYTHON).parent / "planted").exists()
    assert not (operator / "planted").exists()  # the home inside is the sandbox's own


def test_the_working_tree_may_not_be_the_home(proxy: ProxyProcess, operator: Path) -> None:
    marker = operator / "ran"
    result = gitvow_run(["--agent", "coder", "--policy", str(proxy.policy), "--proxy", proxy.url(), "--",
                         "touch", str(marker)], home=operator, cwd=operator,
                        env={"GITVOW_TEST_CODER": CODER_SECRET})
    assert result.returncode == 125
    assert "holds your home directory" in result.stderr
    assert not marker.exists()


# -- set-up: the proxy for the run, and never unsandboxed ---------------------------------------

def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_without_a_running_proxy_one_is_started_for_the_run_and_stopped(
        forge: Upstream, ca_file: Path, proxy: ProxyProcess, operator: Path, tmp_path: Path) -> None:
    import shutil

    workdir = tmp_path / "own-proxy"
    workdir.mkdir()
    shutil.copytree(proxy.confdir, workdir / "confdir")  # the test CA: generating one costs a second
    (workdir / "github-token").write_text(GIT_TOKEN)
    policy = workdir / "policy.toml"
    policy.write_text(policy_text(workdir, forge, ca_file, listen_port=free_port()))
    fetch = f"""
import os, ssl, urllib.request
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
print(urllib.request.urlopen("https://127.0.0.1:{forge.port}/api/v3/repos/team/app", context=ctx).read().decode())
"""
    forge.clear()
    result = gitvow_run(["--agent", "coder", "--policy", str(policy), "--", *python_inside(fetch)], home=operator,
                        cwd=operator / "src" / "project", env={"GITVOW_TEST_CODER": CODER_SECRET})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"path": "/api/v3/repos/team/app"}
    assert any(GIT_TOKEN in s.headers.get("authorization", "") for s in forge.seen)
    assert _processes_naming(str(policy)) == []  # stopped with the run


def test_missing_bubblewrap_is_one_line_and_the_command_never_runs(proxy: ProxyProcess, operator: Path,
                                                                   tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "socat").symlink_to("/usr/bin/socat")
    marker = tmp_path / "ran"
    result = gitvow_run(["--agent", "coder", "--policy", str(proxy.policy), "--proxy", proxy.url(), "--",
                         "/usr/bin/touch", str(marker)], home=operator, cwd=operator / "src" / "project",
                        env={"GITVOW_TEST_CODER": CODER_SECRET, "PATH": str(bin_dir)})
    assert result.returncode == 125
    assert result.stderr.strip() == ("gitvow run: bubblewrap not installed: apt-get install bubblewrap "
                                     "(dnf install bubblewrap); the command was not run")
    assert not marker.exists()


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A directory the unprivileged user can use (pytest's are root's alone)."""
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("switches to an unprivileged user: needs root")
    script = Path(GITVOW)
    if script.is_relative_to("/root") or any(not parent.stat().st_mode & 0o001 for parent in script.parents):
        pytest.skip(f"{GITVOW} is not reachable by an unprivileged user")
    path = Path(tempfile.mkdtemp(prefix="gitvow-nobody-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _as_nobody(nobody_dir: Path, proxy: ProxyProcess, command: list[str], *, userns: bool) -> subprocess.CompletedProcess[str]:
    """``gitvow run`` as user nobody (uid 65534); ``userns=False``: where it may create no user namespace."""
    home = nobody_dir / "home"
    tree = nobody_dir / "tree"
    for path in (home, tree):
        path.mkdir(exist_ok=True)
        os.chown(path, 65534, 65534)
    policy = nobody_dir / "policy.toml"
    policy.write_text('[agents.coder]\nmode = "issues_and_prs"\nsecret_env = "GITVOW_TEST_CODER"\n')
    env_json = nobody_dir / "env.json"
    env_json.write_text(json.dumps({"HTTPS_PROXY": proxy.url("coder", CODER_SECRET)}))
    interpreter = Path(PYTHON).resolve()
    prefix = interpreter.parents[1]  # the interpreter's installation, wherever it lives
    # root's part: /root is root's alone; show nobody the interpreter's installation only
    outer = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", "/root"]
    for parent in reversed(prefix.parents):
        if parent.is_relative_to("/root") and parent != Path("/root"):
            outer += ["--perms", "0755", "--dir", str(parent)]
    outer += ["--ro-bind", str(prefix), str(prefix), "--"]
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    no_userns = ["bwrap", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"] if not userns else []
    run = [GITVOW, "run", "--agent", "coder", "--policy", str(policy), "--proxy", proxy.url(), "--env-json",
           str(env_json), "--", *command]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "GITVOW_TEST_CODER": CODER_SECRET}
    return subprocess.run([*outer, *drop, *no_userns, *run], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=120)


def test_runs_unprivileged(proxy: ProxyProcess, nobody_dir: Path) -> None:
    result = _as_nobody(nobody_dir, proxy, ["/bin/sh", "-c", "id -u > made-inside; echo $HTTPS_PROXY"], userns=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"http://coder:{CODER_SECRET}@127.0.0.1:3128"
    assert (nobody_dir / "tree" / "made-inside").read_text().strip() == "65534"


def test_without_user_namespaces_it_says_how_to_fix_it_and_never_runs_the_command(
        proxy: ProxyProcess, nobody_dir: Path) -> None:
    result = _as_nobody(nobody_dir, proxy, ["/bin/sh", "-c", "touch made-inside"], userns=False)
    assert result.returncode == 125
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("gitvow run: bubblewrap cannot create the sandbox's namespaces")
    assert "kernel.unprivileged_userns_clone=1" in last and last.endswith("the command was not run")
    assert not (nobody_dir / "tree" / "made-inside").exists()


# -- both points in force ------------------------------------------------------------------------

HOOK = """
import json, os, subprocess, sys
settings = json.load(open(os.path.expanduser("~/.claude/settings.json")))
(entry,) = settings["hooks"]["PreToolUse"]
command = entry["hooks"][0]["command"]
policy = open(os.environ["GITVOW_POLICY"]).read()
payload = json.dumps({"cwd": os.getcwd(), "permission_mode": "default", "tool_name": "Bash",
                      "tool_input": {"command": sys.argv[1]}})
done = subprocess.run(command, shell=True, input=payload, capture_output=True, text=True)
print(json.dumps({"policy": json.loads(policy), "code": done.returncode, "out": done.stdout, "err": done.stderr}))
"""


def test_the_gates_hook_is_installed_for_the_agent_it_starts(proxy: ProxyProcess, operator: Path) -> None:
    pytest.importorskip("gitvow_gate", reason="--hook installs gitvow-gate's hook")
    policy = proxy.policy.parent / "gate-policy.toml"
    policy.write_text(proxy.policy.read_text() + textwrap.dedent("""
        [[bash_deny]]
        pattern = "rm -rf /srv"
        reason = "not the server's files"
    """))
    result = gitvow_run(["--agent", "coder", "--policy", str(policy), "--proxy", proxy.url(), "--hook", "claude",
                         "--", *python_inside(HOOK), "rm -rf /srv/app"], home=operator,
                        cwd=operator / "src" / "project", env={"GITVOW_TEST_CODER": CODER_SECRET})
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    decision = json.loads(seen["out"])["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny", seen
    assert "not the server's files" in decision["permissionDecisionReason"]
    # the gate's copy of the policy: its keys and the core's, no word of the proxy's sections or secrets
    assert "bash_deny" in seen["policy"] and "agents" in seen["policy"]
    assert not {"credentials", "proxy", "audit", "admin"} & set(seen["policy"])
    assert "secret_env" not in json.dumps(seen["policy"])
    assert not (operator / ".claude").exists()  # the operator's own home is untouched


def _venv_under(home: Path) -> Path:
    """A virtualenv under the operator's home, as the README's install makes one (``.venv`` of a
    checkout there): its own interpreter and ``gitvow`` script, with this test environment's
    packages (gitvow-proxy beside gitvow-gate) through a ``.pth`` file."""
    import site
    import sys

    venv = home / "gitvow" / ".venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    (purelib,) = [Path(p) for p in site.getsitepackages() if p.startswith(sys.prefix)]
    (target,) = (venv / "lib").glob("python3*/site-packages")
    (target / "dev.pth").write_text(f"import site; site.addsitedir({str(purelib)!r})\n")
    script = venv / "bin" / "gitvow"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom gitvow.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return script


def test_hook_just_works_under_the_readmes_install(proxy: ProxyProcess, operator: Path) -> None:
    pytest.importorskip("gitvow_gate", reason="--hook installs gitvow-gate's hook")
    gitvow = _venv_under(operator)
    (operator / ".local" / "state" / "gitvow").mkdir(parents=True)  # the proxy's default state and audit
    policy = proxy.policy.parent / "readme-policy.toml"
    policy.write_text(proxy.policy.read_text().replace(f'path = "{proxy.policy.parent / 'audit.jsonl'}"', "")
                      + '\n[[bash_deny]]\npattern = "rm -rf /srv"\nreason = "not the server\'s files"\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(operator), "LANG": "C.UTF-8",
           "GITVOW_TEST_CODER": CODER_SECRET}
    result = subprocess.run([str(gitvow), "run", "--agent", "coder", "--policy", str(policy), "--proxy", proxy.url(),
                             "--hook", "claude", "--allow-read", str(operator / ".local"),  # tools there, as pipx puts them
                             "--", *python_inside(HOOK), "rm -rf /srv/app"],
                            cwd=operator / "src" / "project", env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["code"] == 0, seen["err"]
    decision = json.loads(seen["out"])["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny", seen
    assert "not the server's files" in decision["permissionDecisionReason"]


# -- hosts that are not forges -------------------------------------------------------------------

def _wheel(name: str, version: str) -> bytes:
    """A minimal valid wheel (pip reads its metadata)."""
    import io
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: gitvow-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return out.getvalue()


@pytest.fixture(scope="module")
def index(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """A loopback package index (PEP 503 simple pages and one wheel) under the name pypi.test."""
    wheel = _wheel("gitvow_probe", "0.1")
    filename = "gitvow_probe-0.1-py3-none-any.whl"
    server = start_upstream(ca, tmp_path_factory.mktemp("index"), names=(INDEX, ELSEWHERE))
    page = f'<!DOCTYPE html><html><body><a href="/files/{filename}">{filename}</a></body></html>'.encode()
    server.routes["/simple/gitvow-probe/"] = lambda seen: (200, {"Content-Type": "text/html"}, page)
    server.routes["/files/"] = lambda seen: (200, {"Content-Type": "application/octet-stream"}, wheel)
    yield server
    server.server.shutdown()


def test_pip_download_from_an_allowed_index_works(proxy: ProxyProcess, index: Upstream, operator: Path,
                                                  ca_file: Path) -> None:
    pytest.importorskip("pip", reason="pip runs inside the sandbox")
    tree = operator / "src" / "project"
    (tree / "index-ca.pem").write_bytes(ca_file.read_bytes())  # the index's own CA: the tunnel is not intercepted
    index.clear()
    script = f"""
        set -e
        cat "$SSL_CERT_FILE" index-ca.pem > trusted.pem
        export SSL_CERT_FILE="$PWD/trusted.pem" REQUESTS_CA_BUNDLE="$PWD/trusted.pem"
        {PYTHON} -m pip download --no-deps --disable-pip-version-check --index-url https://{INDEX}:{index.port}/simple/ \\
            -d wheels gitvow-probe
    """
    result = run_in(proxy, operator, ["/bin/sh", "-c", textwrap.dedent(script)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tree / "wheels" / "gitvow_probe-0.1-py3-none-any.whl").exists()
    assert "/files/gitvow_probe-0.1-py3-none-any.whl" in [s.route for s in index.seen]


TUNNEL = """
import base64, os, socket, sys
from urllib.parse import urlsplit
proxy = urlsplit(os.environ["HTTPS_PROXY"])
auth = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
with socket.create_connection((proxy.hostname, proxy.port), timeout=10) as conn:
    conn.sendall(f"CONNECT {sys.argv[1]} HTTP/1.1\\r\\nHost: {sys.argv[1]}\\r\\nProxy-Authorization: Basic {auth}\\r\\n\\r\\n".encode())
    data = b""
    while b"\\r\\n\\r\\n" not in data and (chunk := conn.recv(65536)):
        data += chunk
    head, _, body = data.partition(b"\\r\\n\\r\\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\\r\\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length and (chunk := conn.recv(65536)):  # the answer may come in several reads
        body += chunk
    print((head + b"\\r\\n\\r\\n" + body).decode(errors="replace"))
"""


def test_a_host_egress_does_not_allow_is_refused_with_its_reason(proxy: ProxyProcess, index: Upstream,
                                                                  operator: Path) -> None:
    index.clear()
    allowed = run_in(proxy, operator, [*python_inside(TUNNEL), f"{INDEX}:{index.port}"])
    assert allowed.stdout.startswith("HTTP/1.1 200"), allowed.stdout + allowed.stderr  # the same server, allowed
    result = run_in(proxy, operator, [*python_inside(TUNNEL), f"{ELSEWHERE}:{index.port}"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("HTTP/1.1 403")
    assert "reason=egress_not_allowed" in result.stdout


def test_the_admin_listener_is_not_reachable_through_the_proxy_either(proxy: ProxyProcess, operator: Path,
                                                                      admin_port: int) -> None:
    assert outside_connects(admin_port)
    result = run_in(proxy, operator, [*python_inside(TUNNEL), f"127.0.0.1:{admin_port}"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("HTTP/1.1 403")
    assert "reason=egress_" in result.stdout


def test_the_commands_exit_status_and_output_pass_through(proxy: ProxyProcess, operator: Path) -> None:
    result = run_in(proxy, operator, ["/bin/sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "err\n")


def test_nothing_inside_can_make_a_user_namespace_of_its_own(proxy: ProxyProcess, operator: Path) -> None:
    import shutil

    from gitvow_sandbox.bwrap import no_nested_userns

    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    if not no_nested_userns(bwrap):
        pytest.skip("bubblewrap < 0.8 (no --disable-userns) or no user namespaces here")
    outside = subprocess.run(["unshare", "--user", "true"], capture_output=True)
    assert outside.returncode == 0  # the kernel allows it outside
    result = run_in(proxy, operator, ["unshare", "--user", "true"])
    assert result.returncode != 0 and "unshare" in result.stderr


def test_the_proxy_started_for_a_run_stops_when_the_run_is_terminated(
        forge: Upstream, ca_file: Path, proxy: ProxyProcess, operator: Path, tmp_path: Path) -> None:
    import shutil
    import signal
    import time

    workdir = tmp_path / "own-proxy"
    workdir.mkdir()
    shutil.copytree(proxy.confdir, workdir / "confdir")
    (workdir / "github-token").write_text(GIT_TOKEN)
    policy = workdir / "policy.toml"
    policy.write_text(policy_text(workdir, forge, ca_file, listen_port=free_port()))
    marker = operator / "src" / "project" / "started"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(operator), "GITVOW_TEST_CODER": CODER_SECRET}
    run = subprocess.Popen([GITVOW, "run", "--agent", "coder", "--policy", str(policy), "--", "/bin/sh", "-c",
                            f"touch {marker}; exec sleep 300"], cwd=operator / "src" / "project", env=env)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
        assert marker.exists(), "the command did not start"
        assert _processes_naming(str(policy)) != []  # the run's proxy (and gitvow run itself)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if run.poll() is None:
            run.kill()
    deadline = time.monotonic() + 15
    while _processes_naming(str(policy)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_naming(str(policy)) == []
    assert _processes_naming("exec sleep 300") == []  # the sandbox ended with it


def test_allow_write_and_a_home_of_the_agents_own(proxy: ProxyProcess, operator: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    (agent_home / "kept.txt").write_text("from the last run")
    script = f'echo cached > {cache}/x && cat "$HOME/kept.txt" && echo new > "$HOME/new.txt"'
    result = run_in(proxy, operator, ["/bin/sh", "-c", script], "--allow-write", str(cache), "--home",
                    str(agent_home))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "from the last run"
    assert (cache / "x").read_text() == "cached\n"
    assert (agent_home / "new.txt").read_text() == "new\n"
    assert not (operator / "new.txt").exists()
