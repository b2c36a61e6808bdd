"""A repository's default branch, read the way every forge serves it: git's own ref advertisement.

``GET <repo>/info/refs?service=git-upload-pack`` answers with the refs and a capability
``symref=HEAD:refs/heads/<default>`` on GitHub, GitLab, Gitea, Forgejo and ``git
http-backend`` alike, so one forge-neutral lookup serves the ``change`` stage's
default-branch rule. The answer is a :class:`~gitvow.request.Resolution` whose ``type`` is
the branch name, cached like every target (:class:`gitvow.targets.ResolutionCache`); an
enforcement point that sees the agent's own clone or fetch advertisement passing through may
store it without asking (:func:`parse_head`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow.request import Resolution, Target
from gitvow.targets import Fetch

HEAD_KIND = "git.head"
#: The same question asked of the forge's API, for a write made through it: GitHub's
#: ``/repos/o/r``, GitLab's ``/projects/:id`` and Gitea's ``/repos/o/r`` each answer a JSON
#: object whose ``default_branch`` names it (:attr:`gitvow.change.Change.default_branch_at`). A
#: forge whose description names it elsewhere says where after a ``#``: Bitbucket Cloud's
#: ``/2.0/repositories/o/r#mainbranch.name`` (a dotted path of object keys; the fragment is
#: never sent).
API_HEAD_KIND = "api.head"
HEAD_KINDS = frozenset({HEAD_KIND, API_HEAD_KIND})
_SYMREF = b"symref=HEAD:refs/heads/"
#: Protocol v2's ``ls-refs`` answer names it on the HEAD line instead.
_SYMREF_V2 = b" HEAD symref-target:refs/heads/"
#: How much of an advertisement is read for the HEAD line (it is the first ref line).
_READ = 64 * 1024


def head_target(repo: str, git_path: str) -> Target:
    """The lookup of ``repo``'s default branch; ``git_path`` is the repository's smart-HTTP path
    (``/team/app.git``), ``repo`` its name as classified (the cache key)."""
    return Target(HEAD_KIND, repo.lower(), at=f"{git_path.rstrip('/')}/info/refs?service=git-upload-pack")


def api_head_target(repo: str, at: str) -> Target:
    """The lookup of ``repo``'s default branch through the forge's API: ``GET at``."""
    return Target(API_HEAD_KIND, repo.lower(), at=at)


def parse_api_head(body: bytes, key: str = "default_branch") -> str | None:
    """The default branch of a repository as the forge's API describes it: the string at
    ``key``, a dotted path of object keys (``default_branch``, ``mainbranch.name``)."""
    import json

    try:
        data: object = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    for name in key.split("."):
        data = data.get(name) if isinstance(data, dict) else None
    return data if isinstance(data, str) and data else None


def _api_at(at: str) -> tuple[str, str]:
    """(the path asked, the key path naming the branch) of an API head target's ``at``."""
    path, _, key = at.partition("#")
    return path, key or "default_branch"


#: The trees of a commit the forge holds, fetched with git's own upload-pack (``filter
#: blob:none``, ``deepen 1``): what a push's first commit is diffed against when this process
#: has not seen its parent (the enforcement point's resolver fetches and remembers them).
TREES_KIND = "git.trees"


def trees_target(commit: str, git_path: str) -> Target:
    """The lookup of ``commit``'s trees from the repository at ``git_path`` (``/team/app.git``).
    Content-addressed: the same commit id on one host is the same trees whichever repository."""
    return Target(TREES_KIND, commit.lower(), at=f"{git_path.rstrip('/')}/git-upload-pack")


_ENDS = ("/info/refs", "/git-upload-pack", "/git-receive-pack")


def is_git_path(path: str) -> bool:
    """Whether ``path`` is one of git smart-HTTP's three endpoints."""
    return path.endswith(_ENDS)


def git_path(path: str) -> str:
    """The repository part of a smart-HTTP path: everything before ``/info/refs``,
    ``/git-upload-pack`` or ``/git-receive-pack``."""
    for end in _ENDS:
        if path.endswith(end):
            return path[: -len(end)]
    return path


def parse_head(advertisement: bytes) -> str | None:
    """The default branch named by an upload-pack advertisement's ``symref=HEAD:`` capability
    (protocol v0/v1), or by the HEAD line of a protocol v2 ``ls-refs`` answer."""
    head = advertisement[:_READ]
    for marker in (_SYMREF, _SYMREF_V2):
        start = head.find(marker)
        if start >= 0:
            start += len(marker)
            break
    else:
        return None
    end = start
    while end < len(head) and head[end] not in b" \n\0":
        end += 1
    name = head[start:end]
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text or None


def resolve_heads(targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
    """Ask the forge for each repository's advertisement (or its API's description of it);
    unanswered targets stay unresolved."""
    answers: dict[Target, Resolution] = {}
    for target in targets:
        if target.kind not in HEAD_KINDS:
            continue
        if target.kind == HEAD_KIND:
            status, body = fetch("GET", target.at, b"")
            branch = parse_head(body) if status == 200 else None
        else:
            path, key = _api_at(target.at)
            status, body = fetch("GET", path, b"")
            branch = parse_api_head(body, key) if status == 200 else None
        if branch is not None:
            answers[target] = Resolution(repo=None, type=branch)
    return answers


__all__ = [
    "API_HEAD_KIND",
    "HEAD_KIND",
    "HEAD_KINDS",
    "TREES_KIND",
    "api_head_target",
    "git_path",
    "head_target",
    "is_git_path",
    "parse_api_head",
    "parse_head",
    "resolve_heads",
    "trees_target",
]
