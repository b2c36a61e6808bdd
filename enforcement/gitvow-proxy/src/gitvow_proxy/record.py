"""``gitvow proxy --record FILE``: the agents' flows as a mitmproxy flow file, without secrets.

Each request that reached the pipeline is written once its exchange ends, as mitmproxy's own
``FlowWriter`` writes it (so ``mitmproxy -r``, ``mitmdump -nr … --set hardump=…`` and
``gitvow replay`` read it), after everything that authenticates anyone is taken out:

- headers ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` and every
  header the adapter injected are dropped, in the request and the response;
- the injected tokens, the agents' proxy secrets and the canaries are replaced wherever they
  appear: headers and trailers (request and response), the path, the query, the body, the
  host (and its SNI, the server's address). A canary becomes a placeholder naming whom it
  was issued to (:func:`canary_placeholder`), so replay can still refuse it;
- where a secret is still found after that, in any encoding the canary check decodes
  (percent, base64, JSON escapes, gzip, a git pack): a body is withheld whole, and a header or
  trailer value, a path segment or a query parameter becomes the placeholder; a header name
  holding one is dropped; a host holding one becomes ``redacted.invalid``;
- response bodies are not kept: they are the forge's data and replay does not need them,
  except gitvow's own one-line refusals.

The flow's metadata (``gitvow``) holds what the audit line holds (agent, verdict, reason,
stage, operations, repository) and the policy file it was decided under, so replay can
compare against the decisions as they were made.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from mitmproxy import http
from mitmproxy.io import FlowWriter

from gitvow import denial
from gitvow.errors import GitvowError
from gitvow_proxy.canary import CanaryScanner, ScanRefused

if TYPE_CHECKING:
    from gitvow_proxy.flow_metadata import Audited
    from gitvow_proxy.runtime import Runtime

#: Where the decision travels in a recorded flow's metadata.
METADATA_KEY = "gitvow"
REDACTED = b"[redacted by gitvow]"
_DROP = frozenset({b"authorization", b"proxy-authorization", b"cookie", b"set-cookie"})
#: Bodies larger than this are withheld rather than scanned.
_SCAN_LIMIT = 64 * 1024 * 1024


def canary_placeholder(agent: str) -> str:
    """What an agent's canary is replaced with on disk: the same for every token issued to it."""
    return "gvc_redacted_" + hashlib.sha256(f"agent:{agent}".encode()).hexdigest()[:16]


def token_placeholder(token: str) -> str:
    """What a literal ``[canary] tokens`` entry is replaced with on disk."""
    return "gvc_redacted_" + hashlib.sha256(f"token:{token}".encode()).hexdigest()[:16]




@dataclass(frozen=True, slots=True)
class Redactor:
    """Every secret of one loaded policy and what each becomes on disk."""

    replacements: tuple[tuple[bytes, bytes], ...]
    scanner: CanaryScanner

    @classmethod
    def build(cls, *, secrets: tuple[str, ...], canaries: dict[str, str], literal: tuple[str, ...]) -> Redactor:
        """``secrets``: replaced by ``REDACTED``; ``canaries`` token → agent; ``literal``: policy canaries."""
        pairs: dict[bytes, bytes] = {}
        for secret in secrets:
            if secret:
                pairs[secret.encode()] = REDACTED
        for token, agent in canaries.items():
            pairs[token.encode()] = canary_placeholder(agent).encode()
        for token in literal:
            pairs[token.encode()] = token_placeholder(token).encode()
        # Longest first, so a secret that contains another is replaced whole.
        ordered = tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))
        owners = {secret.decode(): placeholder.decode() for secret, placeholder in ordered}
        return cls(ordered, CanaryScanner(owners, limit=_SCAN_LIMIT))

    def text(self, data: bytes) -> bytes:
        for secret, placeholder in self.replacements:
            if data.find(secret) >= 0:  # not ``in``: see canary._plain
                data = data.replace(secret, placeholder)
        return data

    def value(self, data: bytes) -> bytes:
        """A short value (a header or trailer, a path segment, a query parameter, a host): its
        secrets replaced, and the whole value replaced by the placeholder when a secret is still
        found in any encoding the canary check decodes (percent, base64, JSON escapes)."""
        data = self.text(data)
        if not self.scanner or not data:
            return data
        try:
            left = self.scanner.find(data)
        except ScanRefused:
            return REDACTED
        return data if left is None else left.encode()

    def holds(self, data: bytes) -> bool:
        """Whether a secret is in ``data`` as written or in an encoding the canary check decodes."""
        try:
            return bool(self.replacements) and (self.text(data) != data or self.scanner.find(data) is not None)
        except ScanRefused:
            return True

    def is_clean(self, text: str) -> bool:
        """Whether ``text`` holds no secret (not :meth:`holds`)."""
        return not self.holds(text.encode("utf-8", "surrogateescape"))

    def target(self, path: str) -> str:
        """A request target (path and query) without secrets, segment by segment and parameter by
        parameter; the whole target is replaced when one is still found."""
        raw = path.encode("utf-8", "surrogateescape")
        if not self.holds(raw):
            return path
        head, sep, query = raw.partition(b"?")
        segments = [quote(self.value(s), safe=b"%:@!$&'()*+,;=-._~") if self.holds(s) else s for s in head.split(b"/")]
        params = [quote(self.value(p), safe=b"%=:@!$'()*+,;-._~/?") if self.holds(p) else p for p in query.split(b"&")]
        cleaned = b"/".join(s.encode() if isinstance(s, str) else s for s in segments)
        if sep:
            cleaned += b"?" + b"&".join(p.encode() if isinstance(p, str) else p for p in params)
        if self.holds(cleaned):  # spread over several parts (base64 holds '/'): nothing of it is kept
            cleaned = b"/" + quote(REDACTED).encode()
        return cleaned.decode("utf-8", "surrogateescape")

    def body(self, data: bytes, content_encoding: str, *, git_push: bool) -> tuple[bytes, bool]:
        """The body to keep and whether it had to be withheld (a secret still found after replacing)."""
        data = self.text(data)
        if not self.scanner or not data:
            return data, False
        try:
            left = self.scanner.find(data, content_encoding=content_encoding, git_push=git_push)
        except ScanRefused:
            return REDACTED, True
        if left is None:
            return data, False
        return left.encode(), True


#: The last policy's redactor: built once per loaded policy, shared by the audit and record addons.
_LAST: list[tuple[Runtime, Redactor]] = []


def redactor_of(runtime: Runtime) -> Redactor:
    """Every secret of ``runtime`` (credentials, the agents' proxy secrets, every canary it
    recognises, the policy's literal canaries) and what each becomes on disk."""
    cached = _LAST[0] if _LAST else None
    if cached is not None and cached[0] is runtime:
        return cached[1]
    from gitvow_proxy.settings import ProxyPolicy

    redactor = Redactor.build(
        secrets=(*runtime.secrets, *runtime.identities.secrets()),
        canaries=dict(runtime.canaries),
        literal=tuple(runtime.policy.section(ProxyPolicy).canary.tokens),
    )
    _LAST[:] = [(runtime, redactor)]
    return redactor


def clean_audited(entry: Audited, redactor: Redactor) -> None:
    """An audit entry whose request-derived fields (host, path, repository) hold no secret in any
    encoding the canary check decodes, before anything writes it down: the audit line, the
    cluster's recent refusals, a recording's metadata. A repository read out of a path the agent
    chose (``/repos/team/<its canary>/…``) is the agent's text like the path."""
    if not redactor.replacements:
        return
    fresh = [value for value in (entry.path, entry.host, entry.repo) if value]
    # One scan over the values together (NUL between them, which no decoding joins to a
    # neighbour): every view the canary check takes of one value is part of the same view of the
    # whole, so a clean whole means each is clean. Found in the whole, each is looked at alone.
    if not redactor.holds(b"\0".join(v.encode("utf-8", "surrogateescape") for v in fresh)):
        return
    if not redactor.is_clean(entry.path):
        entry.path = redactor.target(entry.path)
    if entry.host and not redactor.is_clean(entry.host):
        entry.host = REDACTED_HOST
    if entry.repo and not redactor.is_clean(entry.repo):
        entry.repo = redactor.value(entry.repo.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")


def _clean_headers(headers: http.Headers | None, redactor: Redactor, drop: frozenset[bytes]) -> None:
    """Headers or trailers: the dropped names gone, a name holding a secret gone, every value
    without secrets in any encoding the canary check decodes."""
    if headers is None:
        return
    headers.fields = tuple(
        (name, redactor.value(value)) for name, value in headers.fields
        if name.lower() not in drop and not redactor.holds(name)
    )


#: What a host name holding a secret becomes on disk.
REDACTED_HOST = "redacted.invalid"


def _clean_host(host: str, redactor: Redactor) -> str:
    return REDACTED_HOST if host and redactor.holds(host.encode("utf-8", "surrogateescape")) else host


def _clean_connections(flow: http.HTTPFlow, redactor: Redactor) -> None:
    """Where the flow went, as its connections remember it (SNI, the server's address)."""
    for conn in (flow.client_conn, flow.server_conn):
        if conn.sni:
            conn.sni = _clean_host(conn.sni, redactor)
    address = flow.server_conn.address
    if address and isinstance(address[0], str) and _clean_host(address[0], redactor) != address[0]:
        flow.server_conn.address = (REDACTED_HOST, *address[1:])


def sanitized(flow: http.HTTPFlow, info: dict[str, Any], redactor: Redactor, injected: tuple[str, ...]) -> http.HTTPFlow:
    """A copy of ``flow`` fit for the disk; ``info`` becomes its only metadata."""
    # The live flow's metadata holds the policy runtime and the injected secrets: never copied.
    metadata, flow.metadata = flow.metadata, {}
    try:
        copy: http.HTTPFlow = flow.copy()  # type: ignore[no-untyped-call]
    finally:
        flow.metadata = metadata
    drop = _DROP | {name.lower().encode() for name in injected}
    request = copy.request
    _clean_headers(request.headers, redactor, drop)
    _clean_headers(request.trailers, redactor, drop)
    request.path = redactor.target(request.path)
    request.host = _clean_host(request.host, redactor)
    if request.authority:
        request.authority = _clean_host(request.authority, redactor)
    _clean_connections(copy, redactor)
    withheld = False
    if request.raw_content:
        git_push = request.method == "POST" and request.path.split("?", 1)[0].endswith("/git-receive-pack")
        body, withheld = redactor.body(request.raw_content, request.headers.get("content-encoding", ""), git_push=git_push)
        if withheld:
            request.headers.pop("content-encoding", None)
        request.raw_content = body
        if "content-length" in request.headers:
            request.headers["content-length"] = str(len(body))
    response = copy.response
    if response is not None:
        _clean_headers(response.headers, redactor, drop)
        _clean_headers(response.trailers, redactor, drop)
        if denial.REASON_HEADER not in response.headers:
            response.headers.pop("content-encoding", None)
            response.headers.pop("transfer-encoding", None)
            response.raw_content = b""
            if "content-length" in response.headers:
                response.headers["content-length"] = "0"
        elif response.raw_content:
            response.raw_content = redactor.value(response.raw_content)
    if copy.error is not None:
        copy.error.msg = redactor.value(copy.error.msg.encode()).decode("utf-8", "replace")
    copy.comment = ""
    copy.metadata[METADATA_KEY] = {**info, "body_withheld": withheld}
    return copy


class Recorder:
    """An open flow file; ``+PATH`` appends as mitmproxy's ``save_stream_file`` does."""

    def __init__(self, spec: str) -> None:
        append = spec.startswith("+")
        self.spec = spec
        self.path = Path(spec[1:] if append else spec).expanduser()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o600)
            if os.name == "posix":
                os.fchmod(fd, 0o600)  # the agents' request bodies: readable by the proxy's user only
            self._file: IO[bytes] = os.fdopen(fd, "ab" if append else "wb")
        except OSError as exc:
            raise GitvowError(f"cannot open the recording {self.path}: {exc.strerror or exc}") from None
        self._writer = FlowWriter(self._file)  # type: ignore[no-untyped-call]

    def write(self, flow: http.HTTPFlow) -> None:
        self._writer.add(flow)
        self._file.flush()

    def close(self) -> None:
        self._file.close()
