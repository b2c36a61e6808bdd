"""``gh`` command lines → the operations the requests they send would be classified as.

``gh pr merge 12`` typed in an agent's shell and the ``PUT …/pulls/12/merge`` it sends get
the same operation, so the agent gate and the proxy give the same verdict. ``gh api`` is
classified by the same route trie and GraphQL mapping as the wire. A ``gh`` command that is
not recognised is ``unknown`` (the gate refuses or asks), never silently allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitvow.argv import option_at, option_value, positionals
from gitvow.graphql import GraphQLReader
from gitvow.request import Classification, ToolCall
from gitvow.vocabulary import READ, UNKNOWN

if TYPE_CHECKING:
    from gitvow.change import Change

ADAPTER = "github"
R = READ

#: group → subcommand → operation. Read-only subcommands are listed so they are not ``unknown``.
SUBCOMMANDS: Mapping[str, Mapping[str, str]] = {
    "pr": {
        "create": "pr.create", "merge": "pr.merge", "review": "pr.review", "comment": "issue.comment",
        "edit": "pr.edit", "ready": "pr.edit", "close": "pr.edit", "reopen": "pr.edit",
        "lock": "issue.edit", "unlock": "issue.edit", "update-branch": "pr.update_branch", "revert": "pr.create",
        "checkout": "git.fetch", "view": R, "list": R, "status": R, "diff": R, "checks": R,
    },
    "issue": {
        "create": "issue.create", "comment": "issue.comment", "edit": "issue.edit", "close": "issue.edit",
        "reopen": "issue.edit", "pin": "issue.edit", "unpin": "issue.edit", "lock": "issue.edit",
        "unlock": "issue.edit", "develop": "ref.write", "delete": UNKNOWN, "transfer": UNKNOWN,
        "view": R, "list": R, "status": R,
    },
    "label": {"create": "label.manage", "edit": "label.manage", "delete": "label.manage", "clone": "label.manage", "list": R},
    "repo": {
        "create": "repo.create", "delete": "repo.delete", "fork": "repo.fork", "archive": "repo.delete",
        "unarchive": "repo.admin", "edit": "repo.admin", "rename": "repo.admin", "sync": "ref.write",
        "clone": "git.fetch", "view": R, "list": R, "set-default": R, "gitignore": R, "license": R,
    },
    "release": {
        "create": "release.write", "edit": "release.write", "delete": "release.write", "upload": "release.write",
        "delete-asset": "release.write", "list": R, "view": R, "download": R, "verify": R, "verify-asset": R,
    },
    "gist": {"create": "gist.write", "edit": "gist.write", "delete": "gist.write", "rename": "gist.write", "clone": "git.fetch", "list": R, "view": R},
    "workflow": {"run": "workflow.dispatch", "enable": "repo.admin", "disable": "repo.admin", "list": R, "view": R},
    "run": {"rerun": "workflow.dispatch", "cancel": "workflow.dispatch", "delete": "repo.admin", "list": R, "view": R, "watch": R, "download": R},
    "secret": {"set": "secret.write", "delete": "secret.write", "remove": "secret.write", "list": R},
    "variable": {"set": "secret.write", "delete": "secret.write", "get": R, "list": R},
    "cache": {"delete": "repo.admin", "list": R},
    "ruleset": {"list": R, "view": R, "check": R},
    "auth": {"login": "auth.login", "refresh": "auth.login", "status": R, "token": R, "logout": R, "setup-git": R, "switch": R},
    "project": {
        "item-add": "issue.relate", "item-create": "issue.relate", "item-edit": "issue.relate",
        "list": R, "view": R, "field-list": R, "item-list": R,
    },
}
#: Groups with no subcommand that only read or only touch local state.
READ_GROUPS = frozenset({"search", "browse", "status", "help", "version", "completion", "--version", "--help", "-h"})
#: Options of ``pr edit`` and ``issue edit`` that put labels on as well.
_LABEL_OPTIONS = ("--add-label",)
#: Options of ``gh repo`` subcommands that take a value (so it is never read as the repository).
_REPO_VALUE_OPTIONS = frozenset({"-d", "--description", "-h", "--homepage", "--remote-name", "--fork-name", "--org",
                                 "-t", "--team", "-p", "--template", "--visibility", "--default-branch",
                                 "--add-topic", "--remove-topic", "-u", "--upstream-branch", "-b", "--branch",
                                 "--source", "-s", "--clone"})
_API_VALUE_OPTIONS = frozenset({"-H", "--header", "-q", "--jq", "-t", "--template", "--hostname", "-p", "--preview", "--cache"})



def _repo_arg(value: str | None) -> str | None:
    """``[HOST/]OWNER/REPO`` → ``owner/repo``; a github URL (``https://github.com/o/r/pull/1``) → ``o/r``."""
    if not value:
        return None
    if "://" in value:
        from urllib.parse import urlsplit

        parts = [p for p in urlsplit(value).path.split("/") if p][:2]
    else:
        parts = [p for p in value.split("/") if p][-2:]
    if len(parts) != 2:
        return None
    return f"{parts[0]}/{parts[1].removesuffix('.git')}"


def _summary(argv: Sequence[str], n: int = 3) -> str:
    return " ".join(["gh", *argv[1:n]])


def classify_gh(argv: Sequence[str], reader: GraphQLReader) -> ToolCall | None:
    """Operations of a ``gh`` argv (wrappers already removed), or None if it is not ``gh``."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "gh":
        return None
    args = list(argv[1:])
    if not args or args[0] in READ_GROUPS:
        return ToolCall((READ,), adapter=ADAPTER, summary=_summary(argv, 2))
    if args[0] == "api":
        return classify_gh_api(args[1:], reader)
    return _classify_subcommand(argv, args[0], args[1] if len(args) > 1 else "", args[2:])


def _classify_subcommand(argv: Sequence[str], group: str, sub: str, rest: Sequence[str]) -> ToolCall:
    """``gh GROUP SUB REST…``: the table's operation, refined by the options that change it."""
    table = SUBCOMMANDS.get(group)
    if table is None or sub not in table:
        if sub in ("--help", "-h", "help", ""):
            return ToolCall((READ,), adapter=ADAPTER, summary=_summary(argv))
        return ToolCall((UNKNOWN,), adapter=ADAPTER, summary=f"{_summary(argv)}: not a recognised gh command")
    operations = _refined_operations(group, sub, table[sub], rest)
    change = _pull_head(rest) if group == "pr" and sub == "create" else None
    return ToolCall(operations, repo=_subcommand_repo(group, rest), adapter=ADAPTER, summary=_summary(argv),
                    change=change)


def _pull_head(rest: Sequence[str]) -> Change | None:
    """``gh pr create --head B`` / ``-H B``: the pull request's head, judged by ``[branches]`` as
    the proxy judges the ``head`` of the request it sends. Every value given is judged (pflag
    keeps the last). Without one the head is the checkout's branch, which only git knows: the
    proxy reads it from the request."""
    heads: list[str] = []
    for i, arg in enumerate(rest):
        if arg == "--":
            break
        taken = option_at(arg, rest[i + 1] if i + 1 < len(rest) else None, ("--head", "-H"))
        if taken is not None and taken[0] is not None:
            heads.append(taken[0].rpartition(":")[2])
    if not heads:
        return None
    from gitvow.change import Change

    return Change(heads=tuple(dict.fromkeys(heads)))


def _refined_operations(group: str, sub: str, operation: str, rest: Sequence[str]) -> tuple[str, ...]:
    """``pr merge --disable-auto`` only edits; ``pr|issue edit --add-label`` also puts labels on."""
    if group == "pr" and sub == "merge" and "--disable-auto" in rest:
        return ("pr.edit",)
    if group in ("pr", "issue") and sub == "edit" and any(
            a == o or a.startswith(o + "=") for a in rest for o in _LABEL_OPTIONS):
        return (operation, "label.add")
    return (operation,)


def _subcommand_repo(group: str, rest: Sequence[str]) -> str | None:
    """The repository: ``--repo``/``-R``, else (``gh repo …``) the first ``OWNER/REPO`` positional,
    else the first URL argument."""
    repo = _repo_arg(option_value(rest, ("--repo", "-R")))
    if repo is None and group == "repo":
        # `gh repo delete|fork|view|edit… [OWNER/REPO]`: the repository is the first positional
        named = [a for a in positionals(rest, _REPO_VALUE_OPTIONS) if "/" in a]
        repo = _repo_arg(named[0]) if named else None
    if repo is None:
        urls = [a for a in rest if a.startswith(("https://", "http://"))]
        repo = _repo_arg(urls[0]) if urls else None
    return repo


class _ApiArgs:
    """What ``gh api``'s options say about the request it would send (filled in as they are read).

    A plain class, not a dataclass: this module is imported for every ``gh`` command the
    agent gate judges, and importing dataclasses costs that path more than the rest of it."""

    __slots__ = ("endpoint", "has_input", "method", "raw", "typed")

    def __init__(self) -> None:
        self.method: str | None = None
        self.endpoint: str | None = None
        self.raw: list[str] = []
        self.typed: list[str] = []
        self.has_input = False

    @property
    def sends_body(self) -> bool:
        return bool(self.raw or self.typed or self.has_input)


def _parse_api_args(args: Sequence[str]) -> _ApiArgs:
    """Walk ``gh api``'s argv once: method, endpoint (the first positional) and body fields."""
    parsed = _ApiArgs()
    i = 0
    while i < len(args):
        i += _take_api_arg(parsed, args[i], args[i + 1] if i + 1 < len(args) else None)
    return parsed


def _take_api_arg(parsed: _ApiArgs, arg: str, value: str | None) -> int:
    """Record one argument (and its value); return how many words it used."""
    taken = option_at(arg, value, ("-X", "--method"))
    if taken is not None:
        parsed.method = taken[0]
        return taken[1]
    for names, into in ((("-f", "--raw-field"), parsed.raw), (("-F", "--field"), parsed.typed)):
        taken = option_at(arg, value, names)
        if taken is not None:
            into.append(taken[0] or "")
            return taken[1]
    if arg == "--input" or arg.startswith("--input="):
        parsed.has_input = True
        return 2 if arg == "--input" else 1
    if arg in _API_VALUE_OPTIONS:
        return 2
    if not (arg.startswith("-") and arg != "-") and parsed.endpoint is None:
        parsed.endpoint = arg
    return 1


def _api_path(endpoint: str) -> str:
    """The path ``gh api ENDPOINT`` requests: a full URL's path (GHES's ``/api/v3`` prefix dropped),
    without its query, always starting with ``/``."""
    path = endpoint
    if "://" in path:
        from urllib.parse import urlsplit

        path = urlsplit(path).path
        if path.startswith("/api/v3/"):
            path = path[len("/api/v3") :]
    return "/" + path.split("?", 1)[0].lstrip("/")


def classify_gh_api(args: Sequence[str], reader: GraphQLReader) -> ToolCall:
    """``gh api [-X METHOD] ENDPOINT [-f k=v] [-F k=v] [--input FILE]``."""
    parsed = _parse_api_args(args)
    if parsed.endpoint is None:
        return ToolCall((UNKNOWN,), adapter=ADAPTER, summary="gh api without an endpoint")
    method = (parsed.method if parsed.method is not None else ("POST" if parsed.sends_body else "GET")).upper()
    summary = f"gh api -X {method} {parsed.endpoint}"
    path = _api_path(parsed.endpoint)
    # The wire classifiers, imported for `gh api` alone (the agent gate's other `gh` commands
    # never load the REST inventory or the GraphQL mapping).
    from gitvow_github.graphql import classify_graphql
    from gitvow_github.rest import classify_rest

    if path in ("/graphql", "/api/graphql"):
        body = _graphql_body(parsed.raw, parsed.typed, parsed.has_input)
        if body is None:
            return ToolCall((UNKNOWN,), adapter=ADAPTER, summary=f"{summary}: the document is not on the command line")
        result = classify_graphql("POST", body, reader)
    else:
        result = _with_change(classify_rest(method, path), path, _rest_body(parsed.raw, parsed.typed, parsed.has_input))
    repo = result.repo
    if repo is not None and ("{owner}" in repo or "{repo}" in repo or ":owner" in repo):
        repo = None  # gh fills these from the current checkout, which the gate does not know
    return ToolCall(result.operations, repo=repo, adapter=ADAPTER, summary=summary, unknown_code=result.unknown_code,
                    mode_code=result.mode_code, note=result.note, targets=result.targets, change=result.change)



def _with_change(result: Classification, path: str, body: bytes | None) -> Classification:
    """The REST call's change and its ``ref.force``/``ref.delete``, read as on the wire
    (:mod:`gitvow_github.changes`), so the gate judges the branch and path rules the command
    line shows (the default branch and what the fields cannot say are the proxy's)."""
    operation_id = result.details.get("operation_id")
    if not isinstance(operation_id, str) or result.is_unknown or result.operations == (READ,):
        return result
    from dataclasses import replace

    from gitvow.change import with_operations
    from gitvow_github.changes import rest_change

    change = rest_change(operation_id, path, body if body is not None else b"{}", "")
    if change is None:
        return result
    # A body the command line does not show (``--input``, a file) is the proxy's to read: the
    # operations the path alone says (a deletion) still count, the change is not judged here.
    return replace(result, operations=with_operations(result.operations, change),
                   change=change if body is not None else None)


def _rest_body(raw: list[str], typed: list[str], has_input: bool) -> bytes | None:
    """The JSON body ``gh api`` sends for flat ``-f``/``-F`` fields; None when it cannot be
    told here (``--input``, a file, nested keys)."""
    if has_input:
        return None
    fields: dict[str, object] = {}
    for field, is_typed in [*((f, False) for f in raw), *((f, True) for f in typed)]:
        key, sep, value = field.partition("=")
        if not sep or "[" in key or (is_typed and value.startswith("@")):
            return None
        fields[key] = _typed(value) if is_typed else value
    return json.dumps(fields).encode()


def _graphql_body(raw: list[str], typed: list[str], has_input: bool) -> bytes | None:
    """The JSON body ``gh api graphql`` would send, or None if part of it comes from a file."""
    if has_input:
        return None
    payload: dict[str, object] = {}
    variables: dict[str, object] = {}
    for field, is_typed in [*((f, False) for f in raw), *((f, True) for f in typed)]:
        key, sep, value = field.partition("=")
        if not sep:
            return None
        if is_typed and value.startswith("@"):
            return None
        parsed: object = value
        if is_typed:
            parsed = _typed(value)
        if key in ("query", "operationName"):
            payload[key] = value
        else:
            variables[key] = parsed
    if "query" not in payload:
        return None
    payload["variables"] = variables
    return json.dumps(payload).encode()


def _typed(value: str) -> object:
    """gh's ``-F`` conversion: true/false/null and integers become JSON values."""
    if value in ("true", "false"):
        return value == "true"
    if value == "null":
        return None
    try:
        return int(value)
    except ValueError:
        return value
