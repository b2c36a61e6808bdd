"""``/metrics`` on the admin listener, scraped while a real ``gitvow proxy`` serves: its
counters match the requests sent, by verdict, reason, adapter and agent."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from proxy_support import ProxyProcess, Upstream, client, comment, proxy_env, start_proxy

from gitvow.testing import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["metrics alone", "beside the desk"])
def metered(
    request: pytest.FixtureRequest, api: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> Iterator[tuple[ProxyProcess, str, bool]]:
    admin = f"127.0.0.1:{free_port()}"
    desk = 'secret_env = "GITVOW_TEST_DESK"' if request.param == "beside the desk" else ""
    policy = tmp_path / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{api.netloc}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{tmp_path / 'state.sqlite'}"

        [audit]
        path = "{tmp_path / 'audit.jsonl'}"

        [admin]
        listen = "{admin}"
        {desk}

        [agents.reader]
        mode = "advisory"
        secret_env = "GITVOW_TEST_READER"

        [agents.limited]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_LIMITED"

        [budget]
        agents = {{ limited = {{ writes = 2 }} }}
    """))
    proxy = start_proxy(policy, tmp_path, {**proxy_env(broken_plugin_path), "GITVOW_TEST_DESK": "desk-secret-6"})
    yield proxy, f"http://{admin}/metrics", bool(desk)
    assert proxy.stop() == 0, proxy.log_text()


def samples(text: str) -> dict[str, float]:
    """``name{labels}`` (labels sorted) → value, for every sample line of a Prometheus text page."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, _, value = line.rpartition(" ")
            name, _, labels = sample.partition("{")
            found[key(name, *labels.rstrip("}").split(",")) if labels else name] = float(value)
    return found


def key(name: str, *labels: str) -> str:
    return f"{name}{{{','.join(sorted(labels))}}}"


def decisions(verdict: str, reason: str, agent: str, adapter: str = "github") -> str:
    return key("gitvow_decisions_total", f'verdict="{verdict}"', f'reason="{reason}"', f'adapter="{adapter}"',
               f'agent="{agent}"')


def test_metrics_count_what_was_sent(metered: tuple[ProxyProcess, str, bool], api: Upstream, ca_file: Path) -> None:
    proxy, url, desk = metered
    with client(proxy, "reader", ca_file) as reader:
        reads = [reader.get(api.url(f"/api/v3/repos/team/app/issues/{n}")).status_code for n in range(5)]
        refused = [comment(reader, api).status_code for _ in range(3)]  # advisory: no writes
    with client(proxy, "limited", ca_file) as limited:
        writes = [comment(limited, api).status_code for _ in range(4)]  # a budget of 2
    with client(proxy, None, ca_file) as anonymous, pytest.raises(httpx.ProxyError):
        anonymous.get(api.url("/api/v3/repos/team/app"))
    assert reads == [200] * 5 and refused == [403] * 3 and writes == [201, 201, 429, 429]

    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    got = samples(page.text)
    assert got[decisions("allow", "", "reader")] == 5
    assert got[decisions("deny", "mode_denied", "reader")] == 3
    assert got[decisions("allow", "", "limited")] == 2
    assert got[decisions("throttle", "write_budget", "limited")] == 2
    assert got[decisions("refuse", "proxy_auth", "", adapter="")] == 1
    assert sum(v for k, v in got.items() if k.startswith("gitvow_decisions_total{")) == 5 + 3 + 4 + 1
    # Every decision that ran the pipeline is timed; every forwarded request's upstream too.
    assert got["gitvow_decision_seconds_count"] == 5 + 3 + 4
    assert got[key("gitvow_upstream_seconds_count", 'adapter="github"')] == 5 + 2
    assert got[key("gitvow_budget_used", 'agent="limited"')] == 2
    assert got["gitvow_store_errors_total"] == 0
    assert got["gitvow_store_up"] == 1
    assert got["gitvow_approvals_pending"] == 0
    # Nothing else without a session: 404 on the bare listener, the desk's sign-in behind the desk.
    assert httpx.get(url.replace("/metrics", "/nothing"), timeout=10).status_code == (303 if desk else 404)
    # A page whose DNS name was rebound to the listener reads nothing: Host is checked first.
    port = url.split(":")[2].split("/")[0]
    assert httpx.get(url, headers={"Host": f"rebound.evil.test:{port}"}, timeout=10).status_code == 421
