"""``gitvow proxy`` in front of a GitLab host, driven by python-gitlab: a note is judged by the
quick actions GitLab would run from it.

An agent at ``issues_only`` may comment; a note that says ``/merge`` is a merge, refused with
the one-line denial python-gitlab hands back to its caller, and nothing reaches GitLab.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from proxy_support import (
    GIT_TOKEN,
    RESOLVE_ADDON,
    ProxyProcess,
    Seen,
    Upstream,
    from_agents,
    proxy_env,
    start_proxy,
    start_upstream,
)
from test_github_e2e import agent_env

pytestmark = pytest.mark.e2e

HOST = "gitlab.test"


def _api(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """Just enough of GitLab's answers: a created note echoes its body."""
    if seen.method == "POST" and seen.path.split("?", 1)[0].endswith("/notes"):
        data: object = {"id": 1, "body": json.loads(seen.body or b"{}").get("body", "")}
        return 201, {"Content-Type": "application/json"}, json.dumps(data).encode()
    return 200, {"Content-Type": "application/json"}, json.dumps({"method": seen.method, "path": seen.path}).encode()


@pytest.fixture(scope="module")
def gitlab_upstream(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    pytest.importorskip("gitvow_gitlab", reason="the GitLab adapter plugin is not installed")
    server = start_upstream(ca, tmp_path_factory.mktemp("gitlab-root"), names=(HOST,))
    server.routes["/api/"] = _api
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def glproxy(
    gitlab_upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("glproxy")
    resolve = workdir / "resolve.py"
    resolve.write_text(RESOLVE_ADDON)
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{HOST}:{gitlab_upstream.port}" = "gitlab"

        [credentials.gitlab]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [agents.reader]
        mode = "issues_only"
        secret_env = "GITVOW_TEST_READER"
    """))
    running = start_proxy(policy, workdir, {**proxy_env(broken_plugin_path), "GITVOW_TEST_RESOLVE": HOST},
                          extra=[f"scripts={resolve}"])
    yield running
    assert running.stop() == 0, running.log_text()


def test_python_gitlab_note_with_merge_is_refused_at_issues_only(
    glproxy: ProxyProcess, gitlab_upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitlab = pytest.importorskip("gitlab", reason="python-gitlab is not installed")
    env = agent_env(glproxy, "reader", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = gitlab.Gitlab(f"https://{HOST}:{gitlab_upstream.port}", private_token="placeholder", retry_transient_errors=False)
    merge_request = client.projects.get("team/app", lazy=True).mergerequests.get(7, lazy=True)

    gitlab_upstream.clear()
    created = merge_request.notes.create({"body": "Looks good to me."})
    assert created.body == "Looks good to me."
    (seen,) = gitlab_upstream.seen
    assert seen.path == "/api/v4/projects/team%2Fapp/merge_requests/7/notes"
    assert seen.headers["authorization"] == f"Bearer {GIT_TOKEN}"

    gitlab_upstream.clear()
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as refused:
        merge_request.notes.create({"body": "Looks good to me.\n/merge"})
    assert refused.value.response_code == 403
    message = str(refused.value.error_message)
    lines = [line for line in message.splitlines() if line.startswith("gitvow refused")]
    assert len(lines) == 1, message
    assert "pr.merge" in lines[0] and "reason=" in lines[0]
    assert from_agents(gitlab_upstream.seen) == []
    assert any(entry.get("operations") and "pr.merge" in entry["operations"] for entry in glproxy.audit_lines()), \
        glproxy.audit_lines()
