"""Approvals a human can trust, end to end: real clients (``gh`` over GraphQL and REST,
python-gitlab) through a ``gitvow proxy`` process to a loopback TLS stand-in forge that answers
the context routes and records what reached it; the desk in Debian's chromium.

- the approval shows what the forge says (repository, number, title, checks, reviews, diff),
  on the desk, in ``gitvow approvals show`` and its ``--json``;
- an approved merge is sent pinned to the head the human saw (``expectedHeadOid``, ``sha``);
- a head that moved after the approval is not sent: ``approval_head_moved``, staged again.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from proxy_support import ProxyProcess, Seen, Upstream, start_upstream
from test_approvals_e2e import ADMIN_SECRET, CHROMIUM, CHROMIUM_ARGS, GITLAB, _start, approval_id, desk_url, gitvow
from test_github_e2e import HOST, agent_env, gh

pytestmark = pytest.mark.e2e

SHA = "c0ffee" + "1" * 34
MOVED = "beef00" + "2" * 34
NODE = "PR_kwDOteam7"
PATCH = "@@ -1,2 +1,2 @@\n def fast():\n-    return slow()\n+    return cached()"


class Forge:
    """GitHub (GHES paths) and GitLab as far as gh, python-gitlab and the context need."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.head = SHA
        self.hung = threading.Event()
        #: The head the merge itself sees, when it differs from what the forge reported a moment before.
        self.merge_head: str | None = None

    def pull_gql(self) -> dict[str, Any]:
        base = f"https://{HOST}:{self.upstream.port}"
        return {
            "id": NODE, "number": 7, "title": "Make the cache faster", "state": "OPEN", "closed": False,
            "isDraft": False, "url": f"{base}/team/app/pull/7", "headRefName": "speed", "baseRefName": "main",
            "headRefOid": self.head, "headRepositoryOwner": {"login": "team"}, "headRepository": {"name": "app"},
            "isCrossRepository": False, "mergeable": "MERGEABLE", "mergeStateStatus": "CLEAN", "author": {"login": "coder-bot"},
            "autoMergeRequest": None, "isInMergeQueue": False, "isMergeQueueEnabled": False, "reviewDecision": "APPROVED",
            "potentialMergeCommit": None, "body": "", "commits": {"totalCount": 1, "nodes": []}, "baseRef": None,
            "mergeCommit": None, "reviewRequests": {"nodes": []}, "viewerCanUpdate": True,
        }

    def graphql(self, seen: Seen) -> object:
        payload = json.loads(seen.body)
        query = payload.get("query", "")
        if "__type(name:" in query:  # gh's feature detection on GHES: every field is there
            types = re.findall(r'(\w+): __type\(name: "(\w+)"\)', query)
            return {"data": {alias: {"fields": [{"name": n} for n in FEATURE_FIELDS]} for alias, _ in types}}
        if "node(id:" in query:
            if str((payload.get("variables") or {}).get("id", "")).startswith("R_"):
                return {"data": {"node": {"__typename": "Repository", "nameWithOwner": "team/app"}}}
            return {"data": {"node": {"__typename": "PullRequest", "number": 7, "repository": {"nameWithOwner": "team/app"}}}}
        if "mergePullRequest" in query:
            return {"data": {"mergePullRequest": {"clientMutationId": None}}}
        if "createPullRequest" in query:
            return {"data": {"createPullRequest": {"pullRequest": {"id": "PR_8", "url": f"https://{HOST}/team/app/pull/8"}}}}
        if "pullRequest(number:" in query or "PullRequestByNumber" in query:
            return {"data": {"repository": {"pullRequest": self.pull_gql()}}}
        if "PullRequestForBranch" in query:
            return {"data": {"repository": {"pullRequests": {"nodes": []}, "defaultBranchRef": {"name": "main"}}}}
        return {"data": {"repository": REPO, "viewer": {"login": "coder-bot"}}}

    def github_rest(self, seen: Seen) -> tuple[int, object]:
        root = "/api/v3/repos/team/app"
        path, method = seen.route, seen.method
        if path == f"{root}/pulls/7" and method == "GET":
            return 200, {"number": 7, "title": "Make the cache faster", "user": {"login": "coder-bot"}, "state": "open",
                         "head": {"ref": "speed", "sha": self.head}, "base": {"ref": "main"}, "mergeable": True,
                         "mergeable_state": "clean", "html_url": f"https://{HOST}/team/app/pull/7", "commits": 1}
        if path == f"{root}/pulls/7/merge":
            pinned = json.loads(seen.body or b"{}").get("sha")
            if pinned and pinned != (self.merge_head or self.head):  # GitHub's answer to a stale pin
                return 409, {"message": "Head branch was modified. Review and try the merge again."}
            return 200, {"sha": "m" * 40, "merged": True, "message": "Pull Request successfully merged"}
        if path == f"{root}/pulls/9/merge":  # an upstream that hangs
            self.hung.wait(60)
            return 200, {"merged": True}
        if path.startswith(f"{root}/commits/") and path.endswith("/check-runs"):
            return 200, {"check_runs": [{"name": "unit tests", "status": "completed", "conclusion": "success"},
                                        {"name": "lint", "status": "completed", "conclusion": "success"}]}
        if path.startswith(f"{root}/commits/") and path.endswith("/status"):
            return 200, {"state": "success", "statuses": [{"context": "ci/build", "state": "success"}]}
        if path == f"{root}/pulls/7/reviews":
            return 200, [{"user": {"login": "alice"}, "state": "APPROVED"}]
        if path == f"{root}/pulls/7/files":
            return 200, [{"filename": "src/cache.py", "additions": 1, "deletions": 1, "status": "modified", "patch": PATCH}]
        if path == f"{root}/compare/main...feature":
            return 200, {"total_commits": 1, "commits": [{"sha": self.head}], "files": [
                {"filename": "docs/feature.md", "additions": 1, "deletions": 0, "status": "added",
                 "patch": "@@ -0,0 +1 @@\n+The feature, documented."}]}
        if path == f"{root}/pulls" and method == "POST":
            return 201, {"number": 8, "html_url": f"https://{HOST}:{self.upstream.port}/team/app/pull/8"}
        if path == root:
            return 200, {"id": 1, "name": "app", "full_name": "team/app", "owner": {"login": "team"}}
        return 404, {"message": "Not Found"}

    def gitlab(self, seen: Seen) -> tuple[int, object]:
        mr = "/api/v4/projects/team%2Fapp/merge_requests/3"
        path = seen.path
        if path == mr and seen.method == "GET":
            return 200, {"iid": 3, "id": 33, "project_id": 1, "title": "Tidy the queue", "author": {"username": "coder-bot"},
                         "source_branch": "tidy", "target_branch": "main", "sha": self.head, "state": "opened",
                         "detailed_merge_status": "mergeable", "references": {"full": "team/app!3"},
                         "head_pipeline": {"status": "success"}, "web_url": f"https://{GITLAB}/team/app/-/merge_requests/3"}
        if path == f"{mr}/approvals":
            return 200, {"approved_by": [{"user": {"username": "bob"}}]}
        if path == f"{mr}/diffs?per_page=100":
            return 200, [{"old_path": "queue.rb", "new_path": "queue.rb", "diff": "@@ -1 +1 @@\n-old\n+new\n"}]
        if path == "/api/v4/projects/team%2Fapp":
            return 200, {"id": 1, "path_with_namespace": "team/app"}
        if path == "/api/v4/projects/team%2Fapp/repository/compare?from=main&to=tidy&straight=false":
            return 200, {"commit": {"id": self.head}, "commits": [{"id": self.head}],
                         "diffs": [{"old_path": "queue.rb", "new_path": "queue.rb", "diff": "@@ -1 +1 @@\n-old\n+tidy\n"}]}
        if path.startswith(f"{mr}/merge"):
            return 200, {"iid": 3, "state": "merged", "project_id": 1, "id": 33}
        return 404, {"message": "404 Not found"}

    def __call__(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        if seen.route == "/api/graphql":
            status, data = 200, self.graphql(seen)
        elif seen.route.startswith("/api/v4/"):
            status, data = self.gitlab(seen)
        else:
            status, data = self.github_rest(seen)
        return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


FEATURE_FIELDS = ("isInMergeQueue", "isMergeQueueEnabled", "mergeQueue", "autoMergeRequest", "latestReviews",
                  "headRepositoryOwner", "statusCheckRollup", "projectItems", "projectCards", "visibility",
                  "mergeCommitAllowed", "rebaseMergeAllowed", "squashMergeAllowed", "isTemplate",
                  "requiresStrictStatusChecks", "isRequired", "contexts", "checkRuns", "state", "mergeStateStatus",
                  "hasDiscussionsEnabled", "mergeQueueEntry")
REPO = {"id": "R_1", "name": "app", "owner": {"login": "team"}, "hasIssuesEnabled": True, "description": "",
        "hasWikiEnabled": False, "viewerPermission": "WRITE", "defaultBranchRef": {"name": "main"}, "parent": None,
        "mergeCommitAllowed": True, "rebaseMergeAllowed": True, "squashMergeAllowed": True}


@pytest.fixture(scope="module")
def forge(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Upstream, Forge]]:
    pytest.importorskip("gitvow_github", reason="the GitHub adapter plugin is not installed")
    server = start_upstream(ca, tmp_path_factory.mktemp("forge-root"), names=(HOST, GITLAB))
    answers = Forge(server)
    server.routes["/api/"] = answers
    yield server, answers
    server.server.shutdown()


@pytest.fixture(scope="module")
def proxy(forge: tuple[Upstream, Forge], ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    running = _start(forge[0], ca_file, broken_plugin_path, tmp_path_factory.mktemp("context"), ttl=3600)
    yield running
    assert running.stop() == 0, running.log_text()


def shown(proxy: ProxyProcess, ident: str, *, timeout: float = 30) -> dict[str, Any]:
    """``approvals show --json`` once the proxy has asked the forge."""
    deadline = time.monotonic() + timeout
    while True:
        data: dict[str, Any] = json.loads(gitvow(proxy, "approvals", "show", ident, "--json").stdout)
        if data.get("context") is not None:
            return data
        assert time.monotonic() < deadline, f"no context for {ident}: {proxy.log_text()[-2000:]}"
        time.sleep(0.3)


def merges(upstream: Upstream) -> list[Seen]:
    return [s for s in upstream.seen if b"mergePullRequest" in s.body or s.route.endswith("/merge")]


def desk_page(proxy: ProxyProcess, path: str, shot: Path) -> str:
    """Sign in to the desk in chromium and return the text of ``path`` (below the session)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(desk_url(proxy) + "login")
            assert "gitvow approval desk" in page.title()
            page.fill("input[name=name]", "carol")
            page.fill("input[name=secret]", ADMIN_SECRET)
            page.click("button:has-text('Sign in')")
            base = page.url
            assert re.search(r"/s/[^/]+/$", base), base
            page.goto(base + path.lstrip("/"))
            page.screenshot(path=str(shot), full_page=True)
            return page.inner_text("body")
        finally:
            browser.close()


def test_gh_graphql_merge_shows_the_forges_context_and_is_sent_pinned(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path
) -> None:
    upstream, answers = forge
    answers.head = SHA
    upstream.clear()
    refused = gh(proxy, upstream, "coder", tmp_path, "pr", "merge", "7", "-R", f"{HOST}:{upstream.port}/team/app", "--squash")
    assert refused.returncode != 0 and "reason=hard_deny" in refused.stderr, (
        refused.stderr + "\n".join(s.body.decode()[:300] for s in upstream.seen))
    ident = approval_id(refused.stderr)
    assert merges(upstream) == []

    data = shown(proxy, ident)
    context = data["context"]
    assert data["repo"] == "team/app" and context["error"] is None, context
    assert (context["number"], context["pull"]["title"], context["head_sha"]) == (7, "Make the cache faster", SHA)
    assert "2 checks: 2 success" in context["pull"]["checks"] and context["pull"]["reviews"] == "approved by alice"
    assert "+    return cached()" in context["changes"]["diff"]
    text = gitvow(proxy, "approvals", "show", ident).stdout
    assert "repository  team/app" in text and "#7 Make the cache faster" in text and "return cached()" in text

    page = desk_page(proxy, f"approvals/{ident}", tmp_path / "graphql-merge.png")
    for expected in ("team/app", "#7", "Make the cache faster", "2 checks: 2 success", "src/cache.py",
                     "return cached()", SHA):
        assert expected in page, expected

    assert gitvow(proxy, "approvals", "approve", ident, "--by", "alice").returncode == 0
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    (merge,) = merges(upstream)
    sent = json.loads(merge.body)
    assert SHA in json.dumps(sent) and "expectedHeadOid" in json.dumps(sent), sent


def test_a_merge_whose_head_moved_is_refused_and_staged_again(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path
) -> None:
    upstream, answers = forge
    answers.head = SHA
    upstream.clear()
    first = gh(proxy, upstream, "coder", tmp_path, "api", "-X", "PUT", "repos/team/app/pulls/7/merge",
               "-f", "merge_method=merge")  # gh over REST
    assert first.returncode != 0 and "reason=hard_deny" in first.stderr + first.stdout
    ident = approval_id(first.stderr + first.stdout)
    assert shown(proxy, ident)["context"]["head_sha"] == SHA
    answers.head = MOVED  # a push after the human looked
    assert gitvow(proxy, "approvals", "approve", ident).returncode == 0
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 1 and "reason=approval_head_moved" in waited.stderr, waited.stdout + waited.stderr
    assert merges(upstream) == []
    again = re.search(r"staged again as approval ([0-9A-Z]{6})", waited.stderr)
    assert again, waited.stderr
    fresh = shown(proxy, again.group(1))
    assert fresh["status"] == "pending" and fresh["context"]["head_sha"] == MOVED
    steps = [line.get("reason") for line in proxy.audit_lines() if line.get("approval") == ident]
    assert "approval_head_moved" in steps
    # Approved again with the new head seen: sent pinned to it.
    assert gitvow(proxy, "approvals", "approve", again.group(1)).returncode == 0
    assert gitvow(proxy, "approvals", "wait", again.group(1), "--timeout", "30").returncode == 0
    (merge,) = merges(upstream)
    assert json.loads(merge.body) == {"merge_method": "merge", "sha": MOVED}


def test_a_merge_the_forge_refuses_for_its_pin_is_staged_again(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path
) -> None:
    """The head moves between the proxy's last look and the merge: the forge refuses the pinned
    sha (409), nothing is merged, and the request is staged again."""
    import httpx

    upstream, answers = forge
    answers.head, answers.merge_head = SHA, None
    env = agent_env(proxy, "coder", tmp_path)
    url = f"https://{HOST}:{upstream.port}/api/v3/repos/team/app/pulls/7/merge"
    context = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    with httpx.Client(proxy=env["HTTPS_PROXY"], verify=context, timeout=30) as client:
        ident = client.put(url, json={"merge_method": "squash"},
                           headers={"Authorization": f"Bearer {env['GH_TOKEN']}"}).headers["x-gitvow-approval"]
    assert shown(proxy, ident)["context"]["head_sha"] == SHA
    answers.merge_head = MOVED
    try:
        assert gitvow(proxy, "approvals", "approve", ident).returncode == 0
        waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    finally:
        answers.merge_head = None
    assert waited.returncode == 1 and "reason=approval_head_moved" in waited.stderr, waited.stdout + waited.stderr
    again = re.search(r"staged again as approval ([0-9A-Z]{6})", waited.stderr)
    assert again and json.loads(gitvow(proxy, "approvals", "show", again.group(1), "--json").stdout)["status"] == "pending"
    assert gitvow(proxy, "approvals", "reject", again.group(1), "--reason", "cleanup").returncode == 0


def test_gh_rest_creation_shows_its_diff(proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path) -> None:
    upstream, answers = forge
    answers.head = SHA
    upstream.clear()
    refused = gh(proxy, upstream, "coder", tmp_path, "api", "-X", "POST", "repos/team/app/pulls", "-f", "title=Document it",
                 "-f", "head=feature", "-f", "base=main", "-f", "body=Why: the docs lacked it.")
    assert refused.returncode != 0 and "reason=hard_deny" in refused.stderr + refused.stdout
    ident = approval_id(refused.stderr + refused.stdout)
    data = shown(proxy, ident)
    assert data["context"]["kind"] == "create" and "+The feature, documented." in data["context"]["changes"]["diff"]
    page = desk_page(proxy, f"approvals/{ident}", tmp_path / "rest-create.png")
    assert "docs/feature.md" in page and "+The feature, documented." in page and "Document it" in page
    # The branch moves before the human's approval reaches the forge: not created, staged again.
    answers.head = MOVED
    assert gitvow(proxy, "approvals", "approve", ident).returncode == 0
    waited = gitvow(proxy, "approvals", "wait", ident, "--timeout", "30")
    assert waited.returncode == 1 and "reason=approval_head_moved" in waited.stderr, waited.stdout + waited.stderr
    assert [s for s in upstream.seen if s.method == "POST" and s.route.endswith("/pulls")] == []
    again = re.search(r"staged again as approval ([0-9A-Z]{6})", waited.stderr)
    assert again and shown(proxy, again.group(1))["context"]["head_sha"] == MOVED
    assert gitvow(proxy, "approvals", "reject", again.group(1), "--reason", "not now").returncode == 0


def test_python_gitlab_merge_request_merge_has_its_context_and_is_pinned(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gitvow_gitlab", reason="the GitLab adapter plugin is not installed")
    gitlab = pytest.importorskip("gitlab")
    upstream, answers = forge
    answers.head = SHA
    env = agent_env(proxy, "coder", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    gl = gitlab.Gitlab(f"https://{GITLAB}:{upstream.port}", private_token=env["GITLAB_TOKEN"], retry_transient_errors=False)
    upstream.clear()
    mr = gl.projects.get("team/app", lazy=True).mergerequests.get(3, lazy=True)
    with pytest.raises(gitlab.exceptions.GitlabMRClosedError) as refused:
        mr.merge()
    assert refused.value.response_code == 403
    ident = re.search(r"approval ([0-9A-Z]{6})", refused.value.error_message)
    assert ident, refused.value.error_message
    data = shown(proxy, ident.group(1))
    context = data["context"]
    assert data["repo"] == "team/app" and context["pull"]["title"] == "Tidy the queue"
    assert context["pull"]["checks"] == "pipeline success" and context["changes"]["files"][0]["path"] == "queue.rb"
    assert gitvow(proxy, "approvals", "approve", ident.group(1)).returncode == 0
    assert gitvow(proxy, "approvals", "wait", ident.group(1), "--timeout", "30").returncode == 0
    (merge,) = [s for s in upstream.seen if s.route.endswith("/merge")]
    assert json.loads(merge.body or b"{}").get("sha") == SHA


def test_staging_is_capped_with_the_throttling_answer(
    forge: tuple[Upstream, Forge], ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    """An agent cannot queue up pull requests faster than a human can read them."""
    import httpx

    upstream, _ = forge
    policy = tmp_path / "capped"
    policy.mkdir()
    running = _start(upstream, ca_file, broken_plugin_path, policy, ttl=3600,
                     extra='\n[budget]\nwrites = 2\nwindow_seconds = 3600\n')
    try:
        env = agent_env(running, "coder", tmp_path)
        url = f"https://{HOST}:{upstream.port}/api/v3/repos/team/app/pulls"
        context = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
        with httpx.Client(proxy=env["HTTPS_PROXY"], verify=context, timeout=30) as client:
            answers = [client.post(url, json={"title": f"PR {n}", "head": f"b{n}", "base": "main"},
                                   headers={"Authorization": f"Bearer {env['GH_TOKEN']}"}) for n in range(4)]
            again = client.post(url, json={"title": "PR 0", "head": "b0", "base": "main"},
                                headers={"Authorization": f"Bearer {env['GH_TOKEN']}"})
        assert [a.status_code for a in answers] == [403, 403, 429, 429]
        assert answers[2].headers["x-gitvow-reason"] == "approval_cap" and int(answers[2].headers["retry-after"]) > 0
        assert answers[2].json()["message"].endswith("reason=approval_cap")
        assert again.status_code == 403 and again.headers["x-gitvow-approval"] == answers[0].headers["x-gitvow-approval"]
        listed = json.loads(gitvow(running, "approvals", "list", "--json").stdout)
        assert len(listed) == 2
        assert any(line.get("reason") == "approval_cap" and line["verdict"] == "throttle" for line in running.audit_lines())
    finally:
        assert running.stop() == 0, running.log_text()


def test_notifications_reach_a_loopback_receiver_signed_retried_and_shown(
    forge: tuple[Upstream, Forge], ca_file: Path, broken_plugin_path: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged and sent go to a JSON webhook (HMAC-signed; its first answer is a 500, so it is
    retried) and to a Slack-compatible one (with the desk link); the state is on the approval."""
    import hashlib
    import hmac
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    got: list[tuple[str, dict[str, str], bytes]] = []
    failures = {"count": 0}

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/json" and failures["count"] == 0:
                failures["count"] += 1
                self.send_response(500)
            else:
                got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hooks = f"""
[approvals.notify]
desk_url = "http://desk.example:8081"

[[approvals.notify.webhooks]]
url = "http://127.0.0.1:{receiver.server_address[1]}/json"
secret_env = "GITVOW_TEST_HOOK_SECRET"

[[approvals.notify.webhooks]]
url = "http://127.0.0.1:{receiver.server_address[1]}/slack"
format = "slack"
events = ["staged"]
"""
    monkeypatch.setenv("GITVOW_TEST_HOOK_SECRET", "hook-secret-3")
    upstream, answers = forge
    answers.head = SHA
    running = _start(upstream, ca_file, broken_plugin_path, tmp_path, ttl=3600, extra=hooks)
    try:
        env = agent_env(running, "coder", tmp_path)
        url = f"https://{HOST}:{upstream.port}/api/v3/repos/team/app/pulls"
        context = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
        with httpx.Client(proxy=env["HTTPS_PROXY"], verify=context, timeout=30) as client:
            ident = client.post(url, json={"title": "Notify me", "head": "feature", "base": "main"},
                                headers={"Authorization": f"Bearer {env['GH_TOKEN']}"}).headers["x-gitvow-approval"]
        assert gitvow(running, "approvals", "approve", ident).returncode == 0
        assert gitvow(running, "approvals", "wait", ident, "--timeout", "30").returncode == 0
        deadline = time.monotonic() + 30
        while len(got) < 4:
            assert time.monotonic() < deadline, got
            time.sleep(0.3)
        # a delivery's state is kept after its receiver answered: wait for the four to be kept
        while True:
            states = json.loads(gitvow(running, "approvals", "show", ident, "--json").stdout)["notifications"]
            if len(states) == 4 and all(v.startswith("delivered") for v in states.values()):
                break
            assert time.monotonic() < deadline, states
            time.sleep(0.3)
    finally:
        assert running.stop() == 0, running.log_text()
        receiver.shutdown()
    events = sorted((path, headers.get("x-gitvow-event", "")) for path, headers, _ in got)
    assert events == [("/json", "approved"), ("/json", "sent"), ("/json", "staged"), ("/slack", "staged")], events
    for path, headers, body in got:
        if path == "/json":
            expected = "sha256=" + hmac.new(b"hook-secret-3", body, hashlib.sha256).hexdigest()
            assert headers["x-gitvow-signature"] == expected
            data = json.loads(body)
            assert data["approval"]["id"] == ident and headers["x-gitvow-delivery"] == f"{ident}:{data['event']}"
        else:
            text = json.loads(body)["text"]
            assert ident in text and "Notify me" in text and f"http://desk.example:8081/login?approval={ident}" in text
    states = json.loads(gitvow(running, "approvals", "show", ident, "--json").stdout)["notifications"]  # after stop
    json_states = [v for k, v in states.items() if "json" in k]
    assert len(json_states) == 3 and all(v.startswith("delivered") for v in json_states), states
    assert sum(v == "delivered (attempt 2)" for v in json_states) == 1, states  # the 500 was retried
    assert states["staged to slack webhook 2"] == "delivered (attempt 1)"


def test_one_hung_upstream_delays_no_other_approval(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path
) -> None:
    import httpx

    upstream, answers = forge
    answers.head = SHA
    answers.hung.clear()
    env = agent_env(proxy, "coder", tmp_path)
    base = f"https://{HOST}:{upstream.port}/api/v3/repos/team/app"
    context = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    auth = {"Authorization": f"Bearer {env['GH_TOKEN']}"}
    with httpx.Client(proxy=env["HTTPS_PROXY"], verify=context, timeout=30) as client:
        hung = client.put(f"{base}/pulls/9/merge", json={}, headers=auth).headers["x-gitvow-approval"]
        other = client.post(f"{base}/pulls", json={"title": "Meanwhile", "head": "feature", "base": "main"},
                            headers=auth).headers["x-gitvow-approval"]
    try:
        assert gitvow(proxy, "approvals", "approve", hung).returncode == 0
        deadline = time.monotonic() + 30
        while json.loads(gitvow(proxy, "approvals", "show", hung, "--json").stdout)["status"] != "sending":
            assert time.monotonic() < deadline
            time.sleep(0.3)
        assert gitvow(proxy, "approvals", "approve", other).returncode == 0
        waited = gitvow(proxy, "approvals", "wait", other, "--timeout", "40")
        assert waited.returncode == 0, waited.stdout + waited.stderr
        assert json.loads(gitvow(proxy, "approvals", "show", hung, "--json").stdout)["status"] == "sending"
    finally:
        answers.hung.set()
    assert gitvow(proxy, "approvals", "wait", hung, "--timeout", "40").returncode == 0


def test_gh_graphql_creation_shows_the_comparison(proxy: ProxyProcess, forge: tuple[Upstream, Forge],
                                                  tmp_path: Path) -> None:
    """``gh pr create`` names the repository by node id only: the forge names it, and the diff."""
    upstream, answers = forge
    answers.head = SHA
    refused = gh(proxy, upstream, "coder", tmp_path, "pr", "create", "-R", f"{HOST}:{upstream.port}/team/app",
                 "--head", "feature", "--base", "main", "--title", "Document the feature", "--body", "Why: it lacked docs.")
    assert refused.returncode != 0 and "reason=hard_deny" in refused.stderr, refused.stderr
    ident = approval_id(refused.stderr)
    data = shown(proxy, ident)
    assert data["repo"] == "team/app" and data["context"]["kind"] == "create" and data["context"]["head_sha"] == SHA
    assert "+The feature, documented." in data["context"]["changes"]["diff"]
    assert gitvow(proxy, "approvals", "reject", ident, "--reason", "not now").returncode == 0


def test_python_gitlab_merge_request_creation_shows_the_comparison(
    proxy: ProxyProcess, forge: tuple[Upstream, Forge], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gitvow_gitlab", reason="the GitLab adapter plugin is not installed")
    gitlab = pytest.importorskip("gitlab")
    upstream, answers = forge
    answers.head = SHA
    env = agent_env(proxy, "coder", tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    gl = gitlab.Gitlab(f"https://{GITLAB}:{upstream.port}", private_token=env["GITLAB_TOKEN"], retry_transient_errors=False)
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as refused:
        gl.projects.get("team/app", lazy=True).mergerequests.create(
            {"source_branch": "tidy", "target_branch": "main", "title": "Tidy the queue"})
    ident = re.search(r"approval ([0-9A-Z]{6})", refused.value.error_message)
    assert refused.value.response_code == 403 and ident, refused.value.error_message
    data = shown(proxy, ident.group(1))
    assert data["repo"] == "team/app" and data["summary"]["head"] == "tidy" and data["context"]["head_sha"] == SHA
    assert "+tidy" in data["context"]["changes"]["diff"]
    assert gitvow(proxy, "approvals", "reject", ident.group(1), "--reason", "not now").returncode == 0
