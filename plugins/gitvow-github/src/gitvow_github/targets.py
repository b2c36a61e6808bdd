"""What a GitHub request targets: repositories named literally, and node ids the forge resolves.

GraphQL mutations address objects by node id (``createIssue(repositoryId:)``,
``addComment(subjectId:)``, ``mergePullRequest(pullRequestId:)``), and may name a repository
literally anywhere in their arguments (``createCommitOnBranch(input: {branch:
{repositoryNameWithOwner: "o/r"}})``). Every argument of every top-level field is walked,
variables substituted: ``repositoryNameWithOwner``/``nameWithOwner`` and an object with both
``owner`` and ``name`` are repositories; every string under a key ending in ``Id`` (or a list
under ``Ids``, or ``id``) is a node to resolve. One ``nodes(ids:)`` query answers up to a
hundred of them: ``nameWithOwner`` for a repository, ``repository.nameWithOwner`` for what
lives in one (issues, pull requests, comments, reviews, labels, …); users, organisations and
projects belong to no repository.

REST: ``PATCH /repos/o/r/issues/N`` edits, closes or reopens a pull request too when N is
one, so it carries an ``issue`` target whose type (``GET`` of the same path says whether it
has ``pull_request``) turns ``issue.edit`` into ``pr.edit``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gitvow.graphql import GraphQLOperation
from gitvow.request import Resolution, Target
from gitvow.targets import Fetch

NODE = "node"
ISSUE = "issue"
UNREADABLE = "unreadable"
#: ``nodes(ids:)`` takes at most this many ids.
BATCH = 100
#: Keys ending in ``Id`` that name no object of a repository.
_NOT_NODES = frozenset({"clientMutationId"})
#: How far into an argument value repositories and ids are looked for.
_DEPTH = 16
ISSUE_AS_PR: tuple[tuple[str, tuple[str, ...]], ...] = (("PullRequest", ("pr.edit",)),)

NODES_QUERY = """query($ids: [ID!]!) { nodes(ids: $ids) { __typename
  ... on Repository { nameWithOwner }
  ... on RepositoryNode { repository { nameWithOwner } }
  ... on Label { repository { nameWithOwner } }
  ... on Milestone { repository { nameWithOwner } }
  ... on Ref { repository { nameWithOwner } }
  ... on Commit { repository { nameWithOwner } }
  ... on PullRequestReviewThread { repository { nameWithOwner } }
  ... on Release { repository { nameWithOwner } }
  ... on Deployment { repository { nameWithOwner } }
  ... on DiscussionComment { discussion { repository { nameWithOwner } } }
} }"""
#: Types that belong to no repository: naming one adds none. Any other type the answer does
#: not place in a repository stays unresolved (a type this query does not know is not free).
REPOSITORY_FREE = frozenset({
    "User", "Organization", "Bot", "Mannequin", "Team", "Enterprise", "Gist", "ProjectV2", "ProjectV2Item",
    "ProjectV2Field", "ProjectV2SingleSelectField", "ProjectV2IterationField",
})


def _walk(value: Any, repos: list[str], ids: list[str], depth: int = 0) -> None:
    if depth > _DEPTH:
        ids.append("")  # too deep to read: an unresolvable target keeps the repository unknown
        return
    if isinstance(value, list):
        for item in value:
            _walk(item, repos, ids, depth + 1)
        return
    if not isinstance(value, dict):
        return
    owner, name = value.get("owner"), value.get("name")
    if isinstance(owner, str) and isinstance(name, str) and owner and name:
        repos.append(f"{owner}/{name}")
    for key, item in value.items():
        if key in ("repositoryNameWithOwner", "nameWithOwner") and isinstance(item, str):
            repos.append(item.strip("/"))
        elif key in _NOT_NODES:
            continue
        elif (key == "id" or key.endswith("Id")) and isinstance(item, str):
            ids.append(item)
        elif key.endswith("Ids") and isinstance(item, list):
            ids.extend(x if isinstance(x, str) else "" for x in item)
        else:
            _walk(item, repos, ids, depth + 1)


def graphql_targets(operation: GraphQLOperation, variables: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[Target, ...]]:
    """Repositories named literally and node-id targets in every top-level field's arguments."""
    repos: list[str] = []
    ids: list[str] = []
    for field in operation.fields:
        try:
            arguments = {name: field.argument(name, variables) for name in field.arguments}
        except Exception:  # a malformed value names nothing we can trust
            ids.append("")
            continue
        _walk(arguments, repos, ids)
    targets = tuple(dict.fromkeys(Target(NODE, i) if i else Target(UNREADABLE, "") for i in ids))
    return tuple(dict.fromkeys(r for r in repos if r.count("/") == 1)), targets


def issue_target(path: str) -> Target:
    """The object ``PATCH`` on an issues path may be: an issue, or a pull request."""
    return Target(ISSUE, path, by_type=ISSUE_AS_PR, at=path)


def resolve(targets: Sequence[Target], fetch: Fetch) -> dict[Target, Resolution]:
    """Ask GitHub: one ``nodes(ids:)`` query per hundred node ids, one GET per issue path."""
    answers: dict[Target, Resolution] = {}
    nodes = [t for t in targets if t.kind == NODE and t.value and t.at]
    by_endpoint: dict[str, list[Target]] = {}
    for target in nodes:
        by_endpoint.setdefault(target.at, []).append(target)
    for endpoint, group in by_endpoint.items():
        for start in range(0, len(group), BATCH):
            answers.update(_nodes(endpoint, group[start : start + BATCH], fetch))
    for target in targets:
        if target.kind == ISSUE:
            answer = _issue(target, fetch)
            if answer is not None:
                answers[target] = answer
    return answers


def _nodes(endpoint: str, group: list[Target], fetch: Fetch) -> Iterator[tuple[Target, Resolution]]:
    body = json.dumps({"query": NODES_QUERY, "variables": {"ids": [t.value for t in group]}}).encode()
    status, answer = fetch("POST", endpoint, body)
    if status != 200:
        return
    data = json.loads(answer)
    nodes = data.get("data", {}).get("nodes") if isinstance(data, dict) and isinstance(data.get("data"), dict) else None
    if not isinstance(nodes, list) or len(nodes) != len(group):
        return
    for target, node in zip(group, nodes, strict=True):
        if not isinstance(node, dict) or not isinstance(node.get("__typename"), str):
            continue  # not found (null): stays unresolved
        kind = node["__typename"]
        repo = _repository_of(node)
        if repo is None and kind not in REPOSITORY_FREE:
            continue  # in a repository we were not told of, or a type we do not know: unresolved
        if repo is not None and repo.count("/") != 1:
            continue
        yield target, Resolution(repo, kind)


def _repository_of(node: dict[str, Any]) -> str | None:
    """``nameWithOwner`` of the node, of its ``repository``, or of its discussion's."""
    holder: Any = node
    if isinstance(holder.get("discussion"), dict):
        holder = holder["discussion"]
    if "nameWithOwner" not in holder and isinstance(holder.get("repository"), dict):
        holder = holder["repository"]
    name = holder.get("nameWithOwner") if isinstance(holder, dict) else None
    return name if isinstance(name, str) else None


def _issue(target: Target, fetch: Fetch) -> Resolution | None:
    status, answer = fetch("GET", target.at, b"")
    if status != 200:
        return None
    data = json.loads(answer)
    if not isinstance(data, dict) or "number" not in data:
        return None
    parts = target.at.split("/")
    try:
        at = parts.index("repos")
        repo = f"{parts[at + 1]}/{parts[at + 2]}"
    except (ValueError, IndexError):
        return None
    return Resolution(repo, "PullRequest" if data.get("pull_request") else "Issue")
