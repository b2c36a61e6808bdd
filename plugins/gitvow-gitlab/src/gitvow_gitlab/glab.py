"""``glab`` command lines → operations, for the agent gate.

``glab mr merge 12`` typed in the agent's shell and the ``PUT …/merge_requests/12/merge`` it
would send get the same operation, so the same verdict. ``glab api`` is classified by the
REST route (or GraphQL document) it names, through the same code as the proxy.

Fail closed: a ``glab`` subcommand this table does not know is ``unknown`` unless its action
is a plain read (``list``, ``view`` …). ``--help`` is not special-cased: pflag would take
``-h`` as the value of a preceding flag, so "it only prints help" cannot be decided from argv.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import quote, unquote, urlsplit

from gitvow.argv import option_value
from gitvow.argv import positionals as plain_arguments
from gitvow.comments import TEXT_OPERATIONS
from gitvow.request import Classification, Request, ToolCall
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_gitlab.quick_actions import quick_actions

#: (subcommand, action) → operation. Aliases glab accepts are listed alongside.
ACTIONS: Mapping[str, Mapping[str, str]] = {
    "mr": {
        "create": "pr.create", "new": "pr.create",
        "merge": "pr.merge", "accept": "pr.merge",
        "approve": "pr.review", "revoke": "pr.review", "unapprove": "pr.review",
        "note": "issue.comment", "comment": "issue.comment",
        "update": "pr.edit", "edit": "pr.edit", "close": "pr.edit", "reopen": "pr.edit",
        "rebase": "pr.update_branch",
        "delete": UNKNOWN, "del": UNKNOWN, "subscribe": UNKNOWN, "unsubscribe": UNKNOWN, "todo": UNKNOWN,
        "checkout": "git.fetch",
    },
    "issue": {
        "create": "issue.create", "new": "issue.create",
        "note": "issue.comment", "comment": "issue.comment",
        "update": "issue.edit", "edit": "issue.edit", "close": "issue.edit", "reopen": "issue.edit",
        "delete": UNKNOWN, "del": UNKNOWN, "subscribe": UNKNOWN, "unsubscribe": UNKNOWN,
    },
    "repo": {
        "create": "repo.create", "new": "repo.create",
        "delete": "repo.delete",
        "fork": "repo.fork",
        "transfer": "repo.admin", "update": "repo.admin", "edit": "repo.admin", "mirror": "repo.admin",
        "members": "repo.admin",
        "clone": "git.fetch",
        "archive": READ,
    },
    "release": {"create": "release.write", "new": "release.write", "delete": "release.write",
                "upload": "release.write", "update": "release.write"},
    "variable": {"set": "secret.write", "new": "secret.write", "create": "secret.write",
                 "update": "secret.write", "delete": "secret.write"},
    "ci": {"run": "workflow.dispatch", "create": "workflow.dispatch", "retry": "workflow.dispatch",
           "trigger": "workflow.dispatch", "cancel": "workflow.dispatch", "delete": "workflow.dispatch",
           "play": "workflow.dispatch", "run-trig": "workflow.dispatch"},
    "schedule": {"create": "workflow.dispatch", "new": "workflow.dispatch", "run": "workflow.dispatch",
                 "update": "workflow.dispatch", "delete": "workflow.dispatch"},
    "label": {"create": "label.manage", "new": "label.manage", "delete": "label.manage", "edit": "label.manage"},
    "snippet": {"create": "gist.write", "new": "gist.write"},
    "auth": {"login": "auth.login", "logout": READ, "status": READ},
}
ALIASES = {"pipe": "ci", "pipeline": "ci", "var": "variable", "merge-request": "mr"}
#: Actions that only read, under any subcommand.
READ_ACTIONS = frozenset({"list", "ls", "view", "show", "get", "status", "trace", "diff", "download",
                          "export", "search", "lint", "issues", "approvers", "contributors", "artifact",
                          "ci-view", "board"})
#: Subcommands that touch only local state.
LOCAL = frozenset({"config", "alias", "completion", "help", "version", "check-update"})

RestClassifier = Callable[[Request], Classification]



#: Options whose value is the next argument, wherever they stand (``-R group/proj``).
_REPO_OPTIONS = frozenset({"-R", "--repo"})


def classify_glab(argv: Sequence[str], classify_request: RestClassifier, host: str = "gitlab.com") -> ToolCall | None:
    """Operations a ``glab`` argv performs; None if it is not glab or touches only local state."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "glab":
        return None
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        args.pop(0)
    if not args:
        return None
    sub = ALIASES.get(args[0], args[0])
    rest = args[1:]
    if sub in LOCAL:
        return None
    repo = option_value(rest, ("-R", "--repo"))
    if sub == "api":
        return _classify_api(rest, classify_request, host, repo)
    positional = plain_arguments(rest, _REPO_OPTIONS)
    action = positional[0] if positional else ""
    op = ACTIONS.get(sub, {}).get(action)
    if op is None:
        op = READ if action in READ_ACTIONS or (not action and sub in ACTIONS) else UNKNOWN
    if repo is None and sub == "repo":
        # `glab repo delete|fork|view… [GROUP/]NAMESPACE/REPO`: the repository is the positional after the action
        named = [a for a in positional[1:2] if "/" in a]
        repo = named[0].strip("/").removesuffix(".git") if named else None
    summary = " ".join(["glab", sub, action]).strip()
    operations: tuple[str, ...] = (op,)
    if sub in _TEXT_CONTEXTS and op in TEXT_OPERATIONS:
        # A note (-m) or description (-d) is read for quick actions: ``glab mr note 7 -m /merge``
        # merges. Every argument is read: stricter than picking the option out.
        found = quick_actions(rest, _TEXT_CONTEXTS[sub])
        operations = tuple(dict.fromkeys((op, *found.operations)))
    return ToolCall(operations, repo=repo, adapter="gitlab", summary=summary)


_TEXT_CONTEXTS = {"mr": "merge_request", "issue": "issue"}


_SHORT_VALUE_FLAGS = frozenset({"-X", "-f", "-F", "-H", "-R"})
_LONG_NAMES = {"--method": "-X", "--raw-field": "-f", "--field": "-F", "--header": "-H", "--repo": "-R",
               "--hostname": "--hostname", "--input": "--input"}


def _api_options(args: list[str]) -> tuple[list[tuple[str, str]], list[str]] | None:
    """``glab api`` argv → (options as (short name, value), positionals); None if ambiguous.

    pflag accepts ``-f v``, ``-fv``, ``-f=v``, ``--field v`` and ``--field=v``; a cluster of
    short flags that hides a value-taking one (``-if…``) cannot be read safely.
    """
    options: list[tuple[str, str]] = []
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            canonical = _LONG_NAMES.get(name)
            if canonical is None:
                continue  # a boolean such as --paginate, --include, --silent
            if not eq:
                value = args[i] if i < len(args) else ""
                i += 1
            options.append((canonical, value))
        elif arg.startswith("-") and len(arg) > 1:
            short = arg[:2]
            if short in _SHORT_VALUE_FLAGS:
                value = arg[2:]
                if value.startswith("="):
                    value = value[1:]
                elif not value:
                    value = args[i] if i < len(args) else ""
                    i += 1
                options.append((short, value))
            elif any(f"-{c}" in _SHORT_VALUE_FLAGS for c in arg[1:]):
                return None
        else:
            positionals.append(arg)
    return options, positionals


def _api_flags(options: list[tuple[str, str]], repo: str | None) -> tuple[str, dict[str, str], bool, str | None]:
    """(``-X`` method, ``-f``/``-F`` fields, whether any data is sent, ``-R`` repository)."""
    method = ""
    fields: dict[str, str] = {}
    has_data = False
    for name, value in options:
        if name == "-X":
            method = value.upper()
        elif name in ("-f", "-F", "--input"):
            has_data = True
            if name != "--input" and "=" in value:
                key, _, val = value.partition("=")
                fields[key] = val
        elif name == "-R":
            repo = value
    return method, fields, has_data, repo


def _graphql_request(method: str, fields: dict[str, str], host: str) -> Request:
    document = {"query": fields.get("query", "")}
    if "operationName" in fields:
        document["operationName"] = fields["operationName"]
    # glab sends GraphQL as a POST whatever -X says when there are fields.
    return Request(method="POST" if method == "GET" and fields.get("query") else method, host=host,
                   path="/api/graphql", body=json.dumps(document).encode(),
                   headers={"content-type": "application/json"})


def _rest_request(endpoint: str, method: str, fields: dict[str, str], host: str, repo: str | None) -> Request:
    path = urlsplit(endpoint).path if "://" in endpoint else endpoint
    query = urlsplit(endpoint).query if "?" in endpoint else ""
    path = "/" + path.lstrip("/").split("?", 1)[0]
    if repo:
        # glab fills these placeholders from the current repository or -R.
        encoded = quote(repo.strip("/"), safe="")
        path = "/".join(encoded if seg in (":id", ":fullpath") else seg for seg in path.split("/"))
    if not path.startswith("/api/v4/"):
        path = "/api/v4" + path
    body = json.dumps(fields).encode() if fields else b""
    return Request(method=method, host=host, path=path, query=query, body=body,
                   headers={"content-type": "application/json"} if body else {})


def _classify_api(
    args: list[str], classify_request: RestClassifier, host: str, repo: str | None
) -> ToolCall:
    parsed = _api_options(args)
    if parsed is None:
        return ToolCall((UNKNOWN,), repo=repo, adapter="gitlab", summary="glab api with flags that cannot be read")
    options, positionals = parsed
    method, fields, has_data, repo = _api_flags(options, repo)
    endpoint = positionals[0] if positionals else None
    if endpoint is None:
        return ToolCall((UNKNOWN,), repo=repo, adapter="gitlab", summary="glab api without an endpoint")
    method = method or ("POST" if has_data else "GET")
    if endpoint == "graphql":
        request = _graphql_request(method, fields, host)
    else:
        request = _rest_request(endpoint, method, fields, host, repo)
    result = classify_request(request)
    summary = f"glab api {method} {unquote(request.path)}"
    found = result.repo if result.repo and not result.repo.startswith(":") else None
    return ToolCall(result.operations, repo=found or repo, adapter="gitlab", summary=summary,
                    unknown_code=result.unknown_code, mode_code=result.mode_code, note=result.note,
                    targets=result.targets)
