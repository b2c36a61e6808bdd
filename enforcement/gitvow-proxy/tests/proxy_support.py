"""Real parts for the proxy's end-to-end tests: an HTTPS upstream that records what reached
it (serving git through ``git-http-backend`` and small JSON stand-ins for forge APIs), and a
``gitvow proxy`` subprocess on loopback in front of it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme

from gitvow.testing import RecordingServer, Reply, Responder, Seen, free_port, wait_for_port

SECRETS = {"reader": "reader-secret-1", "coder": "coder-secret-2", "limited": "limited-secret-3", "control-plane": "control-plane-secret-4",
           "talker": "talker-secret-5"}
GIT_TOKEN = "ghs_upstreamtoken0123456789abcdef"

BROKEN_PLUGIN = '''
from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl


class BrokenAdapter(Adapter):
    name = "broken"

    def classify(self, request):
        raise RuntimeError("this adapter is broken on purpose")


@hookimpl
def register_adapters(register):
    register(BrokenAdapter())
'''


GIT_HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
GITVOW = str(Path(sys.executable).with_name("gitvow"))
MITMDUMP = str(Path(sys.executable).with_name("mitmdump"))


Handler = Responder


@dataclass
class Upstream:
    """An HTTPS server on 127.0.0.1 with a certificate of the test CA: ``routes`` (by path
    prefix) first, then git through ``git-http-backend``, else an echo of the request."""

    server: RecordingServer
    git_root: Path
    routes: dict[str, Handler] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def netloc(self) -> str:
        return self.server.netloc

    @property
    def seen(self) -> list[Seen]:
        return self.server.seen

    def url(self, path: str) -> str:
        return f"https://{self.netloc}{path}"

    def paths(self) -> list[str]:
        return [f"{s.method} {s.path}" for s in self.seen]

    def clear(self) -> None:
        self.server.clear()

    def respond(self, seen: Seen) -> Reply:
        path = seen.route
        handler = next((h for prefix, h in self.routes.items() if path.startswith(prefix)), None)
        if handler is not None:
            return handler(seen)
        if ".git/" in path or path.endswith(("/info/refs", "/git-upload-pack", "/git-receive-pack")):
            return _run_git_backend(self, seen)
        return _echo(seen)


def _run_git_backend(upstream: Upstream, seen: Seen) -> tuple[int, dict[str, str], bytes]:
    path, _, query = seen.path.partition("?")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(upstream.git_root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "REQUEST_METHOD": seen.method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": seen.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(seen.body)),
        "REMOTE_USER": "gitvow-test",
        "REMOTE_ADDR": "127.0.0.1",
        # as GitHub, GitLab and Gitea serve it: partial clones (filters) and any commit wanted
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": "http.receivepack",
        "GIT_CONFIG_VALUE_0": "true",
        "GIT_CONFIG_KEY_1": "uploadpack.allowFilter",
        "GIT_CONFIG_VALUE_1": "true",
        "GIT_CONFIG_KEY_2": "uploadpack.allowAnySHA1InWant",
        "GIT_CONFIG_VALUE_2": "true",
    }
    if "content-encoding" in seen.headers:
        env["HTTP_CONTENT_ENCODING"] = seen.headers["content-encoding"]
    if "git-protocol" in seen.headers:
        env["GIT_PROTOCOL"] = seen.headers["git-protocol"]
    proc = subprocess.run([GIT_HTTP_BACKEND], input=seen.body, env=env, capture_output=True, timeout=60)
    head, _, body = proc.stdout.partition(b"\r\n\r\n")
    if not _:
        head, _, body = proc.stdout.partition(b"\n\n")
    status, headers = 200, {}
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            headers[name.strip()] = value.strip()
    return status, headers, body


def _echo(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Default stand-in for a forge API: echo what arrived (including the injected header)."""
    payload = {"method": seen.method, "path": seen.path, "headers": seen.headers}
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def start_upstream(ca: trustme.CA, git_root: Path, names: Sequence[str] = ()) -> Upstream:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost", *names).configure_cert(context)
    server = RecordingServer(ssl_context=context)
    upstream = Upstream(server, git_root)
    server.respond = upstream.respond
    server.start()
    return upstream


@dataclass
class ProxyProcess:
    """A running ``gitvow proxy`` (or ``mitmdump -s``) and where it keeps things."""

    proc: subprocess.Popen[bytes]
    port: int
    policy: Path
    confdir: Path
    audit: Path
    log: Path

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    def url(self, agent: str | None = None, secret: str | None = None) -> str:
        auth = f"{agent}:{secret}@" if agent is not None else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def audit_lines(self) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


_TEMPLATE: list[Path] = []


def _template_confdir() -> Path:
    if not _TEMPLATE:
        import tempfile

        from gitvow_proxy.agentenv import proxy_ca

        path = Path(tempfile.mkdtemp(prefix="gitvow-test-ca-")) / "confdir"
        proxy_ca(path)
        _TEMPLATE.append(path)
    return _TEMPLATE[0]


#: A test-only mitmproxy addon: the names in GITVOW_TEST_RESOLVE are 127.0.0.1, for
#: mitmproxy's connections and for the proxy's own lookups alike (as /etc/hosts would make them).
RESOLVE_ADDON = '''
import os
import socket

NAMES = set(os.environ.get("GITVOW_TEST_RESOLVE", "").split(","))
_getaddrinfo = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    return _getaddrinfo("127.0.0.1" if host in NAMES else host, *args, **kwargs)


socket.getaddrinfo = getaddrinfo


class Resolve:
    def server_connect(self, data):
        host, port = data.server.address
        if host in NAMES:
            data.server.address = ("127.0.0.1", port)


addons = [Resolve()]
'''

#: A test-only mitmproxy script: wraps the proxy's state store so that every call says which
#: thread made it. A call on mitmproxy's event loop thread is appended to
#: ``$GITVOW_TEST_LOOP_GUARD/on-loop`` (with where it came from), any other to ``off-loop``;
#: ``ready`` appears once the store is wrapped.
LOOP_GUARD_ADDON = '''
import inspect
import os
import threading
import traceback
from pathlib import Path

from mitmproxy import ctx

OUT = Path(os.environ["GITVOW_TEST_LOOP_GUARD"])


class Guarded:
    def __init__(self, store, loop_thread):
        self._store, self._loop_thread = store, loop_thread

    def __getattr__(self, name):
        value = getattr(self._store, name)
        if not callable(value):
            return value
        if inspect.iscoroutinefunction(value):  # awaited on the loop, which it must never hold up
            with (OUT / "awaited").open("a") as out:
                out.write(f"{name} {'loop' if threading.get_ident() == self._loop_thread else 'other'}\\n")
            return value

        def call(*args, **kwargs):
            if threading.get_ident() == self._loop_thread:
                where = "".join(traceback.format_stack(limit=6)[:-1])
                with (OUT / "on-loop").open("a") as out:
                    out.write(f"{name}\\n{where}\\n")
            else:
                with (OUT / "off-loop").open("a") as out:
                    out.write(f"{name}\\n")
            return value(*args, **kwargs)

        return call


class LoopGuard:
    def running(self):
        loop_thread = threading.get_ident()
        for addon in ctx.master.addons.chain:
            for part in getattr(addon, "chained", ()):
                shared = getattr(part, "shared", None)
                if shared is not None and shared.store is not None and not isinstance(shared.store, Guarded):
                    shared.store = Guarded(shared.store, loop_thread)
                    shared.runtime.gates.store = shared.store
        (OUT / "ready").write_text("wrapped")


addons = [LoopGuard()]
'''


def start_proxy(
    policy: Path,
    workdir: Path,
    env: Mapping[str, str],
    *,
    mitmdump: bool = False,
    extra: Sequence[str] = (),
    args: Sequence[str] = (),
    wrapper: Sequence[str] = (),
) -> ProxyProcess:
    """``gitvow proxy`` (or mitmdump with the script) on a free loopback port; ``wrapper`` is
    put before the command (bubblewrap, to give the proxy a resolver of the test's own)."""
    port = free_port()
    confdir = workdir / "confdir"
    if not confdir.exists():  # generating a CA costs a second: every test proxy shares one
        shutil.copytree(_template_confdir(), confdir)
    log = workdir / f"proxy-{port}.log"
    if mitmdump:
        import gitvow_proxy.mitmdump_script

        cmd = [MITMDUMP, "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", f"confdir={confdir}",
               "-s", gitvow_proxy.mitmdump_script.__file__, "--set", f"gitvow_policy={policy}",
               "--set", "connection_strategy=lazy", "--set", "flow_detail=0"]
        for option in extra:
            cmd += ["--set", option]
    else:
        cmd = [GITVOW, "proxy", "--policy", str(policy), "--listen-port", str(port), "--confdir", str(confdir), *args]
        for option in extra:
            cmd += ["--set", option]
    with log.open("wb") as out:
        proc = subprocess.Popen([*wrapper, *cmd], stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env})
    proxy = ProxyProcess(proc, port, policy, confdir, workdir / "audit.jsonl", log)
    try:
        wait_for_port(port, proc)
    except RuntimeError as exc:
        proxy.stop()
        raise RuntimeError(f"{exc}\n{proxy.log_text()}") from None
    return proxy


def wait_until(check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll ``check`` until it holds (a running proxy picks edits up on its own schedule)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def agent_client(proxy: ProxyProcess, agent: str) -> Any:
    """An httpx client through ``proxy`` as ``agent``, trusting the proxy's CA only."""
    import httpx

    return httpx.Client(proxy=proxy.url(agent, SECRETS[agent]),
                        verify=ssl.create_default_context(cafile=str(proxy.ca)), timeout=30)


def api_reply(seen: Seen) -> Reply:
    """A forge REST stand-in for the ``github`` adapter: 201 to a POST, 200 to the rest."""
    if seen.method == "POST":
        return 201, {"Content-Type": "application/json"}, json.dumps({"id": 5}).encode()
    return 200, {"Content-Type": "application/json"}, json.dumps({"path": seen.path}).encode()


def client(proxy: ProxyProcess, agent: str | None, ca_file: Path) -> Any:
    """An httpx client through ``proxy`` as ``agent`` (None: no proxy identity), trusting the
    proxy's CA and the upstream's."""
    import httpx

    context = ssl.create_default_context(cafile=str(proxy.ca))
    context.load_verify_locations(cafile=str(ca_file))
    secret = SECRETS[agent] if agent is not None else None
    return httpx.Client(proxy=proxy.url(agent, secret), verify=context, timeout=30)


def comment(c: Any, api: Upstream, repo: str = "team/app", body: str = "looks good") -> Any:
    """An issue comment (``issue.comment``, a write) on ``repo`` through client ``c``."""
    return c.post(api.url(f"/api/v3/repos/{repo}/issues/1/comments"), json={"body": body})


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def git(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd or Path.cwd()),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "agent",
        "GIT_AUTHOR_EMAIL": "agent@example.test",
        "GIT_COMMITTER_NAME": "agent",
        "GIT_COMMITTER_EMAIL": "agent@example.test",
        **(env or {}),
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def make_bare_repo(root: Path, name: str, work: Path) -> Path:
    """A bare repository ``root/name.git`` with one commit on main."""
    bare = root / f"{name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=root)
    seed = work / f"seed-{name.replace('/', '-')}"
    git("init", "-q", "-b", "main", str(seed), cwd=work)
    (seed / "README.md").write_text(f"# {name}\n")
    git("add", "README.md", cwd=seed)
    git("commit", "-q", "-m", "seed", cwd=seed)
    git("push", "-q", str(bare), "main", cwd=seed)
    shutil.rmtree(seed)
    return bare


def write_policy(path: Path, upstream: Upstream, ca_file: Path, workdir: Path, extra: str = "") -> Path:
    path.write_text(
        textwrap.dedent(
            f"""
            [hosts]
            "{upstream.netloc}" = "gitsmart"
            "localhost:{upstream.port}" = "broken"

            [credentials.gitsmart]
            token_env = "GITVOW_TEST_GIT_TOKEN"

            [proxy]
            upstream_ca = "{ca_file}"
            state = "{workdir / 'state.sqlite'}"
            allowed_repos = ["team/*"]

            [audit]
            path = "{workdir / 'audit.jsonl'}"

            [internal]
            name = "control-plane"
            secret_env = "GITVOW_TEST_CONTROL_PLANE"

            [agents.reader]
            mode = "advisory"
            secret_env = "GITVOW_TEST_READER"

            [agents.coder]
            mode = "issues_and_prs"
            secret_env = "GITVOW_TEST_CODER"

            [agents.limited]
            mode = "issues_and_prs"
            secret_env = "GITVOW_TEST_LIMITED"

            [agents.talker]
            mode = "issues_and_prs"
            secret_env = "GITVOW_TEST_TALKER"

            [write_surface]
            lanes = {{ talk = ["issue.*", "label.add"] }}
            agents = {{ talker = "talk" }}

            [budget]
            window_seconds = 3600
            agents = {{ limited = {{ operations = {{ "git.push" = 1 }} }} }}
            """
        )
        + textwrap.dedent(extra)
    )
    return path


def github_policy(path: Path, api: Upstream, ca_file: Path, state: str | Path, extra: str = "", *,
                  proxy: str = "", host: str = "") -> Path:
    """Write a policy for the ``github`` adapter before ``api``: its credential, ``state`` (a
    SQLite path or a ``redis://`` URL), the audit log beside ``path`` and agent ``coder``
    (``issues_and_prs``); ``proxy`` adds lines to ``[proxy]``, ``extra`` adds tables; ``host``
    names the stand-in (``name:port``) where the agents reach it by a name, not its address."""
    path.write_text(textwrap.dedent(f"""
        [hosts]
        "{host or api.netloc}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{state}"
        """) + textwrap.dedent(proxy) + textwrap.dedent(f"""
        [audit]
        path = "{path.parent / 'audit.jsonl'}"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
        """) + textwrap.dedent(extra))
    return path


def proxy_env(plugin_path: Path) -> dict[str, str]:
    return {
        "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN,
        "GITVOW_TEST_READER": SECRETS["reader"],
        "GITVOW_TEST_CODER": SECRETS["coder"],
        "GITVOW_TEST_LIMITED": SECRETS["limited"],
        "GITVOW_TEST_CONTROL_PLANE": SECRETS["control-plane"],
        "GITVOW_TEST_TALKER": SECRETS["talker"],
        "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_path), os.environ.get("PYTHONPATH")])),
    }


def from_agents(seen: list[Seen]) -> list[Seen]:
    """What reached a stand-in forge on the agents' behalf: without the proxy's own lookups
    (resolving node ids, an approval's context), which read with ``User-Agent: gitvow-proxy``."""
    return [s for s in seen if s.headers.get("user-agent") != "gitvow-proxy"]

