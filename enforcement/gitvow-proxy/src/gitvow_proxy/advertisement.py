"""git's ref advertisements, as they come back from the forge through the proxy.

Two things are done to a forwarded ``GET …/info/refs`` answer:

* **receive-pack**: the capability ``no-thin`` is added, so the git client sends a pack
  whose deltas have their bases inside it. The proxy reads every pushed object from the
  pack alone (:mod:`gitvow_gitsmart.pack`); a thin pack would name bases only the forge
  has, and is refused.
* **upload-pack**: the ``symref=HEAD:`` capability names the repository's default branch;
  it is remembered as the answer of the default-branch lookup (:mod:`gitvow.githead`), so
  the agent's push after its clone or fetch costs no lookup of the forge.
"""

from __future__ import annotations

import logging

from mitmproxy import http

from gitvow.githead import head_target, parse_head
from gitvow.request import Request, Resolution
from gitvow.targets import ResolutionCache
from gitvow_proxy.gates import resolution_scope

log = logging.getLogger("gitvow_proxy.advertisement")

_RECEIVE = "service=git-receive-pack"
_UPLOAD = "service=git-upload-pack"


def add_no_thin(body: bytes) -> bytes | None:
    """The advertisement with ``no-thin`` among the capabilities of its first ref line (None:
    no capability list found, or the capability there already)."""
    pos = 0
    while pos + 4 <= len(body):
        try:
            size = int(body[pos: pos + 4], 16)
        except ValueError:
            return None
        if size == 0:
            pos += 4
            continue
        if size < 4 or pos + size > len(body):
            return None
        payload = body[pos + 4: pos + size]
        if b"\0" in payload:
            refs, _, caps = payload.partition(b"\0")
            tail = b"\n" if caps.endswith(b"\n") else b""
            names = caps.rstrip(b"\n").split(b" ")
            if b"no-thin" in names:
                return None
            new = refs + b"\0" + b" ".join([*names, b"no-thin"]) + tail
            return body[:pos] + b"%04x" % (len(new) + 4) + new + body[pos + size:]
        pos += size
    return None


def on_response(flow: http.HTTPFlow, request: Request, adapter: str, repo: str | None,
                resolutions: ResolutionCache) -> None:
    """Rewrite or read a forwarded ``info/refs`` answer, or a protocol v2 ``ls-refs`` answer
    (git clone's), for the default branch (see the module docstring)."""
    response = flow.response
    if response is None or response.status_code != 200:
        return
    if request.method == "POST" and request.path.endswith("/git-upload-pack"):
        if b"command=ls-refs" in (flow.request.raw_content or b"")[:4096] and repo is not None:
            _remember(response.content or b"", request, request.path[: -len("/git-upload-pack")], adapter, repo,
                      resolutions)
        return
    if request.method != "GET" or not request.path.endswith("/info/refs"):
        return
    body = response.content or b""
    if _RECEIVE in request.query:
        rewritten = add_no_thin(body)
        if rewritten is not None:
            response.content = rewritten
    elif _UPLOAD in request.query and repo is not None:
        _remember(body, request, request.path[: -len("/info/refs")], adapter, repo, resolutions)


def _remember(body: bytes, request: Request, git_path: str, adapter: str, repo: str,
              resolutions: ResolutionCache) -> None:
    branch = parse_head(body)
    if branch is not None:
        target = head_target(repo, git_path)
        scope = resolution_scope(adapter, request.host, request.port)
        resolutions.store(scope, (target,), {target: Resolution(repo=None, type=branch)})


__all__ = ["add_no_thin", "on_response"]
