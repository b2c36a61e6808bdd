"""git smart-HTTP paths → ``git.fetch`` / ``git.push`` and the repository they name."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from urllib.parse import parse_qs, unquote

from gitvow.change import NOTHING, with_operations
from gitvow.change_rules import CHANGE_TOO_LARGE
from gitvow.request import Classification, Request
from gitvow.secrets import scan
from gitvow_gitsmart.changes import KnownTrees, commit_links, push_change, tip_files
from gitvow_gitsmart.pack import PACK_LIMIT, PackError, PackTooLarge, read_pack
from gitvow_gitsmart.pktline import COMMANDS_LIMIT, PktLineError, read_commands, read_push_request
from gitvow_gitsmart.push_options import option_operations

UPLOAD = "git-upload-pack"
RECEIVE = "git-receive-pack"
_SERVICE_OPERATION = {UPLOAD: "git.fetch", RECEIVE: "git.push"}
_SERVICE_QUERIES = frozenset(f"service={service}" for service in _SERVICE_OPERATION)
_ENDPOINTS = ("/info/refs", f"/{UPLOAD}", f"/{RECEIVE}")
_GZIP_WINDOW = 16 + zlib.MAX_WBITS


def is_git_path(path: str) -> bool:
    """Whether a path belongs to git's HTTP protocols rather than to a forge API.

    Case-blind, so ``/o/r.GIT/INFO/REFS`` (which a case-insensitive front end could route to
    git) is git's, and :func:`classify_git`, which reads only git's own spelling, refuses it."""
    lowered = path.lower()
    return lowered.endswith(_ENDPOINTS) or ".git/" in lowered or lowered.endswith(".git")


def _repo(prefix: str, strip: str) -> str | None:
    if strip and prefix.startswith(strip):
        prefix = prefix[len(strip) :]
    repo = unquote(prefix).strip("/")
    if repo.endswith(".git"):
        repo = repo[: -len(".git")]
    return repo or None


#: The trees of every pack this process read (content-addressed, so true whoever pushed them):
#: a later push diffs against its parent's trees exactly when they are here.
KNOWN_TREES = KnownTrees()


class _OverLimit(Exception):
    pass


def _body(request: Request, limit: int) -> bytes:
    """The body, gunzipped if it says so; more than ``limit`` bytes is :class:`_OverLimit`."""
    if request.header("content-encoding").lower() != "gzip":
        if len(request.body) > limit:
            raise _OverLimit
        return request.body
    inflater = zlib.decompressobj(_GZIP_WINDOW)
    try:
        body = inflater.decompress(request.body, limit + 1)
    except zlib.error:
        raise PktLineError("gzip body does not inflate") from None
    if len(body) > limit:
        raise _OverLimit
    if not inflater.eof:
        raise PktLineError("gzip body is truncated")
    return body


def classify_git(request: Request, *, strip_prefix: str = "", limit: int = COMMANDS_LIMIT,
                 pack_limit: int = PACK_LIMIT) -> Classification | None:
    """Classify a git request, or return None if the path is not git's.

    ``strip_prefix`` removes a mount point (``/git``) before the repository is read. A push
    is read whole: its commands, then its pack (:func:`push_classification`).
    """
    path = request.path
    if not is_git_path(path):
        return None
    for endpoint in _ENDPOINTS:
        if path.endswith(endpoint):
            repo = _repo(path[: -len(endpoint)], strip_prefix)
            break
    else:
        head = path.split(".git/", 1)[0] if ".git/" in path else path
        return Classification.unknown("not a git smart-HTTP endpoint", repo=_repo(head, strip_prefix))
    if endpoint == "/info/refs":
        if request.method not in ("GET", "HEAD"):
            return Classification.unknown("info/refs is only fetched with GET", repo=repo)
        query = request.query
        services = [query[8:]] if query in _SERVICE_QUERIES else parse_qs(query).get("service", [])
        if len(services) != 1 or services[0] not in _SERVICE_OPERATION:
            return Classification.unknown("info/refs without a smart-HTTP service (dumb HTTP is not supported)", repo=repo)
        operation = _SERVICE_OPERATION[services[0]]
        # The advertisement before a push is ``git.push`` (a mode that refuses pushes refuses it
        # first) but moves nothing itself: its change is empty, and established.
        return Classification((operation,), repo=repo, details={"service": services[0]},
                              change=NOTHING if operation == "git.push" else None)
    if request.method != "POST":
        return Classification.unknown(f"{endpoint[1:]} takes POST", repo=repo)
    if endpoint == f"/{UPLOAD}":
        return Classification(("git.fetch",), repo=repo, details={"service": UPLOAD})
    return push_classification(request, repo, limit=limit, pack_limit=pack_limit)


def push_classification(request: Request, repo: str | None, *, limit: int, pack_limit: int) -> Classification:
    """``git.push`` with its ref updates and :class:`~gitvow.change.Change`; ``ref.force`` and
    ``ref.delete`` added for forced updates and deletions. What cannot be read is ``unknown``:
    commands, a pack that does not parse, a thin pack, or a body over the scan limit (refused
    unread, ``change_too_large``)."""
    too_large = f"the push is over the scan limit of {pack_limit} bytes and is not read"
    try:
        body = _body(request, limit + pack_limit)
        refs, options, start = read_push_request(body, limit=limit)
    except _OverLimit:
        return Classification.unknown(too_large, code=CHANGE_TOO_LARGE, repo=repo)
    except PktLineError as exc:
        return Classification.unknown(f"push commands unreadable: {exc}", repo=repo)
    try:
        pack = read_pack(memoryview(body)[start:], limit=pack_limit, scan=scan)
        change = push_change(refs, pack, KNOWN_TREES)
    except PackTooLarge:
        return Classification.unknown(too_large, code=CHANGE_TOO_LARGE, repo=repo)
    except PackError as exc:
        return Classification.unknown(f"push pack unreadable: {exc}", repo=repo)
    extra, unread = option_operations(options)
    if unread:
        return Classification.unknown(f"push option {unread!r} is not read: its effect on the forge is not judged",
                                      repo=repo)
    return Classification(with_operations(("git.push", *extra), change), repo=repo, refs=refs,
                          details={"service": RECEIVE}, change=change)



def describe_push(body: bytes, protected: Callable[[str], bool], *, limit: int = COMMANDS_LIMIT,
                  pack_limit: int = PACK_LIMIT) -> dict[str, str]:
    """What a held push does, for the human asked to approve it: its ref updates, the paths it
    changes, and each protected file as the push leaves it. Raises :class:`PktLineError` or
    :class:`PackError` when the body cannot be read."""
    refs, start = read_commands(body, limit=limit)
    pack = read_pack(memoryview(body)[start:], limit=pack_limit)
    change = push_change(refs, pack, KNOWN_TREES)
    unknown = [parent for raw in pack.commits.values() for parent in commit_links(raw)[1]
               if parent not in pack.commits and KNOWN_TREES.root(parent) is None]
    shown: dict[str, str] = {
        "refs": "; ".join(f"{r.ref} {r.kind} {r.old[:12]}..{r.new[:12]}" for r in change.refs),
        "paths": ", ".join(change.paths) or "(none)",
        **({"paths read": "from the pushed trees alone: the parent's trees are not known in this process, so a "
                          "file deleted beside new content in the same directory is not listed (the proxy's "
                          "desk shows the diff where the proxy read the branch's last push)"} if unknown else {}),
        "added": f"{change.added_bytes} bytes in {len(pack.blobs)} new files (largest {change.largest})",
    }
    for ref in change.refs:
        for path, content in tip_files(pack, ref.new, lambda p: protected(p) and p in change.paths).items():
            shown[f"file {path}"] = "\n" + content.decode("utf-8", "replace")
    return shown
