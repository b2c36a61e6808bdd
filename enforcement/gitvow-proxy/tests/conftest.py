from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

# The support module sits beside this file; pytest runs with --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))

from proxy_support import (
    BROKEN_PLUGIN,
    ProxyProcess,
    Upstream,
    api_reply,
    make_bare_repo,
    proxy_env,
    start_proxy,
    start_upstream,
    write_policy,
)

from gitvow_proxy.testing import REDIS_SERVER, RedisServer


@pytest.fixture(scope="session", autouse=True)
def _home_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A HOME of the session's own, for the tests and every process they start: a default path
    of the proxy (its state, audit log, confdir and canary key under ``~/.local``) that a test
    forgets to set lands in a temporary directory, never in the real home."""
    home = tmp_path_factory.mktemp("home")
    real = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield home
    if real is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = real


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

    pytest.importorskip("gitvow_gitsmart", reason="the upstream is mapped to the gitsmart adapter")
    _needs("git")
    _needs(GIT_HTTP_BACKEND)
    root = tmp_path_factory.mktemp("git-root")
    work = tmp_path_factory.mktemp("git-seed")
    for name in ("team/app", "team/paused", "other/app"):
        make_bare_repo(root, name, work)
    server = start_upstream(ca, root)
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def proxy(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("proxy")
    policy = write_policy(workdir / "policy.toml", upstream, ca_file, workdir, '[run_state]\npaused = ["team/paused"]\n')
    running = start_proxy(policy, workdir, proxy_env(broken_plugin_path))
    yield running
    assert running.stop() == 0, running.log_text()


@pytest.fixture
def tls_redis_server(tmp_path: Path, ca: trustme.CA, ca_file: Path) -> Iterator[RedisServer]:
    """A real ``redis-server`` serving only ``rediss://``, its certificate from the test CA
    (``ca_file``); skipped where redis-server was built without TLS."""
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    server = RedisServer(tmp_path / "redis", tls=(tmp_path / "cert.pem", tmp_path / "key.pem", ca_file))
    try:
        server.start()
    except RuntimeError as exc:  # a redis-server built without TLS
        pytest.skip(f"redis-server cannot serve TLS here: {exc}")
    yield server
    server.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real ``redis-server`` of this test's own (scripts/test installs it where missing)."""
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis")
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def api(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """A GitHub Enterprise style REST stand-in (map its netloc to the ``github`` adapter)."""
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    server = start_upstream(ca, tmp_path_factory.mktemp("api-root"))
    server.routes["/api/"] = api_reply
    yield server
    server.server.shutdown()
