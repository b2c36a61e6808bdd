from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from proxy_support import ProxyProcess, Upstream, make_bare_repo, start_proxy, start_upstream

SECRETS = {"reader": "reader-secret-1", "coder": "coder-secret-2", "limited": "limited-secret-3", "hive": "hive-secret-4"}
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


def _needs(tool: str) -> None:
    if not (shutil.which(tool) or os.path.exists(tool)):
        pytest.skip(f"{tool} is not installed")


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ca") / "upstream-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture(scope="session")
def broken_plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test-only plugin, installed the way pip would leave it (a module and its dist-info),
    on a path given to the proxy process through PYTHONPATH."""
    root = tmp_path_factory.mktemp("plugins")
    (root / "gitvow_test_broken.py").write_text(BROKEN_PLUGIN)
    info = root / "gitvow_test_broken-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gitvow-test-broken\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text("[gitvow]\ntest-broken = gitvow_test_broken\n")
    return root


@pytest.fixture(scope="module")
def upstream(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    from proxy_support import GIT_HTTP_BACKEND

    _needs("git")
    _needs(GIT_HTTP_BACKEND)
    root = tmp_path_factory.mktemp("git-root")
    work = tmp_path_factory.mktemp("git-seed")
    for name in ("team/app", "team/paused", "other/app"):
        make_bare_repo(root, name, work)
    server = start_upstream(ca, root)
    yield server
    server.server.shutdown()


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
            name = "hive"
            secret_env = "GITVOW_TEST_HIVE"

            [agents.reader]
            mode = "advisory"
            secret_env = "GITVOW_TEST_READER"

            [agents.coder]
            mode = "issues_and_prs"
            secret_env = "GITVOW_TEST_CODER"

            [agents.limited]
            mode = "issues_and_prs"
            secret_env = "GITVOW_TEST_LIMITED"

            [budget]
            window_seconds = 3600
            agents = {{ limited = {{ operations = {{ "git.push" = 1 }} }} }}
            """
        )
        + textwrap.dedent(extra)
    )
    return path


def proxy_env(plugin_path: Path) -> dict[str, str]:
    return {
        "GITVOW_TEST_GIT_TOKEN": GIT_TOKEN,
        "GITVOW_TEST_READER": SECRETS["reader"],
        "GITVOW_TEST_CODER": SECRETS["coder"],
        "GITVOW_TEST_LIMITED": SECRETS["limited"],
        "GITVOW_TEST_HIVE": SECRETS["hive"],
        "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_path), os.environ.get("PYTHONPATH")])),
    }


@pytest.fixture(scope="module")
def proxy(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("proxy")
    policy = write_policy(workdir / "policy.toml", upstream, ca_file, workdir, '[run_state]\npaused = ["team/paused"]\n')
    running = start_proxy(policy, workdir, proxy_env(broken_plugin_path))
    yield running
    assert running.stop() == 0, running.log_text()
