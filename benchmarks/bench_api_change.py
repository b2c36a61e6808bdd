"""What a write through a forge's API changes: a ~10 MB commit through GitLab's commits API and
Gitea's multi-file contents API, classified by the adapters on one core.

Each body writes 80 files of ~125 KB (base64 in both bodies, as python-gitlab and py-gitea
send binary-safe content), one of them a CI file: the adapter reads the JSON body, decodes
every content strictly, scans it and the body for credentials, and builds the Change the
``change`` stage judges. The body itself is what the proxy already holds.

Run: ``pytest benchmarks/bench_api_change.py --benchmark-only`` (figures in docs/benchmarks.md,
"What a write through an API changes"). CI runs it with ``--benchmark-disable``.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from gitvow.request import Request

FILES = 80
LINES = 2500  # ~50 bytes a line: ~125 KB a file, ~10 MB of content in all


def _contents() -> dict[str, bytes]:
    rng = random.Random(7)
    words = [f"word{i}" for i in range(5000)]
    files = {f"src/f{n:03d}.txt": "\n".join(" ".join(rng.choice(words) for _ in range(6)) for _ in range(LINES)).encode()
             for n in range(FILES - 1)}
    files[".gitlab-ci.yml"] = b"deploy:\n  script: make deploy\n"
    return files


@pytest.fixture(scope="module")
def contents() -> dict[str, bytes]:
    return _contents()


def _gitlab(contents: dict[str, bytes]) -> Request:
    actions = [{"action": "create", "file_path": path, "encoding": "base64", "content": base64.b64encode(data).decode()}
               for path, data in contents.items()]
    body = json.dumps({"branch": "agent/bench", "commit_message": "bench", "actions": actions}).encode()
    return Request.from_url("POST", "https://gitlab.com/api/v4/projects/team%2Fapp/repository/commits", body=body,
                            headers={"content-type": "application/json"})


def _gitea(contents: dict[str, bytes]) -> Request:
    files = [{"operation": "create", "path": path, "content": base64.b64encode(data).decode()}
             for path, data in contents.items()]
    body = json.dumps({"branch": "agent/bench", "message": "bench", "files": files}).encode()
    return Request.from_url("POST", "https://codeberg.org/api/v1/repos/team/app/contents", body=body,
                            headers={"content-type": "application/json"})


@pytest.mark.parametrize("forge", ["gitlab", "gitea"])
def test_read_a_10mb_api_commit(benchmark, contents: dict[str, bytes], forge: str) -> None:  # type: ignore[no-untyped-def]
    if forge == "gitlab":
        adapter_module = pytest.importorskip("gitvow_gitlab")
        adapter, request = adapter_module.GitLabAdapter(), _gitlab(contents)
    else:
        adapter_module = pytest.importorskip("gitvow_gitea")
        adapter, request = adapter_module.GiteaAdapter(), _gitea(contents)
    result = benchmark.pedantic(adapter.classify, args=(request,), rounds=5, iterations=1, warmup_rounds=1)
    change = result.change
    assert change is not None and not change.unestablished and len(change.paths) == FILES
    assert change.added_bytes == sum(len(data) for data in contents.values())
    benchmark.extra_info["body_mb"] = round(len(request.body) / 1e6, 1)
    benchmark.extra_info["content_mb"] = round(change.added_bytes / 1e6, 1)
