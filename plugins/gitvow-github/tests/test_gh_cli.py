"""The real ``gh`` CLI against a loopback TLS stand-in for a GHES host.

For each command line, what the agent gate reads from the argv (``classify_command``) and
what the proxy reads from the requests ``gh`` actually sent must be the same operations:
that is the promise that a shell command and its wire traffic get one verdict.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from gitvow.request import Request
from gitvow.testing import RecordingServer, Reply, Seen
from gitvow.vocabulary import READ
from gitvow_github.adapter import GitHubAdapter

trustme = pytest.importorskip("trustme")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gh") is None, reason="the gh CLI is not installed (Debian package gh)"),
]

def respond(seen: Seen) -> Reply:
    data = b'{"data": {}}' if seen.path.startswith("/api/graphql") else b'{"id": 1, "name": "bug"}'
    return 200, {"content-type": "application/json"}, data


@pytest.fixture(scope="module")
def ghes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RecordingServer, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("gh")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp / "ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tmp / "server.pem"))
    with RecordingServer(respond, certfile=tmp / "server.pem") as server:
        env = {
            "PATH": os.environ.get("PATH", ""), "HOME": str(tmp), "GH_CONFIG_DIR": str(tmp / "config"),
            "SSL_CERT_FILE": str(tmp / "ca.pem"), "GH_HOST": server.netloc, "GH_ENTERPRISE_TOKEN": "agent-token",
            "GH_NO_UPDATE_NOTIFIER": "1", "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1",
        }
        yield server, env


COMMANDS = [
    "gh api -X PUT repos/octo/app/pulls/1/merge",
    "gh api repos/octo/app/pulls -f title=t -f head=x -f base=main",
    "gh api --method DELETE repos/octo/app/git/refs/heads/feature/x",
    "gh api -X POST repos/octo/app/issues/3/sub_issues -F sub_issue_id=9",
    "gh api repos/octo/app/pulls/1",
    "gh api graphql -f query='mutation { mergePullRequest(input: {pullRequestId: \"P\"}) { clientMutationId } }'",
    "gh api graphql -f query='mutation { addComment(input: {subjectId: \"I\", body: \"hi\"}) { clientMutationId } }'",
    "gh api graphql -f query='query($o: String!) { repository(owner: $o, name: \"app\") { id } }' -f o=octo",
    "gh label create bug --color ff0000 -R HOST/octo/app",
]


@pytest.mark.parametrize("line", COMMANDS, ids=[c[:70] for c in COMMANDS])
def test_command_line_and_wire_agree(ghes: tuple[RecordingServer, dict[str, str]], line: str) -> None:
    server, env = ghes
    argv = shlex.split(line.replace("HOST", env["GH_HOST"]))
    adapter = GitHubAdapter()
    gate = adapter.classify_command(argv)
    assert gate is not None
    start = len(server.seen)
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    sent = server.seen[start:]
    assert sent, "gh sent nothing"
    wire = [adapter.classify(Request.from_url(s.method, f"https://{env['GH_HOST']}{s.path}", body=s.body)) for s in sent]
    writes = [op for c in wire for op in c.operations if op != READ] or [READ]
    assert sorted(set(writes)) == sorted(set(gate.operations)), (sent, gate)
    for classification in wire:
        if classification.repo is not None and gate.repo is not None:
            assert classification.repo == gate.repo
