"""The mitmproxy addon: every request to an adapter's host passes the pipeline first.

Loaded by ``gitvow proxy`` and equally by plain mitmproxy::

    mitmdump -s "$(python -c 'import gitvow_proxy.addon as m; print(m.__file__)')" \\
        --set gitvow_policy=policy.toml

Options: ``gitvow_policy`` (the policy file, required), ``gitvow_state`` (overrides
``[proxy] state``) and ``gitvow_record`` (write the agents' flows, without secrets, to a
mitmproxy flow file: see :mod:`gitvow_proxy.record`). Without a valid policy every request is refused: the addon never fails
open. TLS is intercepted only for hosts an adapter asks for; other hosts are tunnelled
untouched, or refused when ``[proxy] other_hosts = "refuse"``.

Refusals are answered in the shape the client prints (the adapter's ``refusal_body``). A
request the ``approval`` relay refuses is staged in the store (:mod:`gitvow_proxy.approvals`);
the addon also sends approved ones upstream, once (:mod:`gitvow_proxy.sender`), and serves the
approval desk when ``[admin]`` has a secret (:mod:`gitvow_proxy.desk`).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from pathlib import Path
from typing import Any

from mitmproxy import connection, ctx, exceptions, http, tcp, tls, udp

from gitvow import denial, refusal
from gitvow.errors import GitvowError
from gitvow.gates import Caller
from gitvow.pipeline import INTERNAL_ERROR, Action, Decision
from gitvow.policy.load import Policy
from gitvow.relay import APPROVAL_EXPIRED, APPROVAL_REJECTED
from gitvow.request import Request
from gitvow.targets import Pending
from gitvow.verdict import Verdict
from gitvow_proxy import approvals
from gitvow_proxy.admin import AdminServer
from gitvow_proxy.audit import AuditLog, audit_approval
from gitvow_proxy.gates import UNAVAILABLE_RETRY
from gitvow_proxy.identity import PROXY_AUTHENTICATE, Identity
from gitvow_proxy.metrics import CONTENT_TYPE, Metrics
from gitvow_proxy.record import Recorder, Redactor, policy_stamp, sanitized
from gitvow_proxy.resolver import resolve_pending, tls_context
from gitvow_proxy.runtime import Runtime, build_runtime, open_state
from gitvow_proxy.sender import APPROVAL_KEY, REFUSED_KEY, Sender
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.store import STATE_UNAVAILABLE, Store

log = logging.getLogger("gitvow_proxy")

HOST_NOT_SERVED = "host_not_served"
INSECURE_UPSTREAM = "insecure_upstream"
UNSUPPORTED_PROTOCOL = "unsupported_protocol"
REDACTED = b"[redacted by gitvow]"
_SECRETS_KEY = "gitvow.secrets"
_IDENTITY_KEY = "gitvow.identity"
_SENT_KEY = "gitvow.sent"
_RECORD_KEY = "gitvow.record"
_VERDICTS = {Action.FORWARD: "allow", Action.DENY: "deny", Action.THROTTLE: "throttle"}


def _refusal(status: int, message: str, code: str, **headers: str) -> http.Response:
    return http.Response.make(
        status,
        message + "\n",
        {"Content-Type": "text/plain; charset=utf-8", denial.REASON_HEADER: code, **headers},
    )


class GitvowAddon:
    """Identity (407), the pipeline (403/429), credential injection, and response scrubbing."""

    def __init__(self) -> None:
        self.runtime: Runtime | None = None
        self.store: Store | None = None
        self.audit: AuditLog | None = None
        self._stamp: tuple[int, int] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._auth: dict[str, str] = {}  # client connection id → its CONNECT's Proxy-Authorization
        self._known: dict[str, tuple[str, Runtime, Identity]] = {}  # connection id → last identity proven
        self.sender = Sender(self)
        self.desk: Any = None  # gitvow_proxy.desk.Desk, when [admin] has a secret
        self.metrics = Metrics(lambda: (self.runtime, self.store))
        self.admin: AdminServer | None = None
        self.recorder: Recorder | None = None
        self._redactor_cache: tuple[Runtime, Redactor, dict[str, str]] | None = None
        self._policy_stamp: tuple[Runtime, dict[str, str]] | None = None  # the file as loaded, for recordings
        self._tls: tuple[str | None, ssl.SSLContext] | None = None  # upstream CA → context for lookups

    # -- mitmproxy lifecycle ------------------------------------------------------------------

    def load(self, loader: Any) -> None:
        loader.add_option("gitvow_policy", str, "", "gitvow policy file (TOML or JSON).")
        loader.add_option("gitvow_state", str, "", "gitvow state store: a SQLite path, :memory: or redis://HOST:PORT/DB "
                          "(default: [proxy] state).")
        loader.add_option("gitvow_record", str, "", "write the agents' flows, without credentials, canaries or cookies, "
                          "to this mitmproxy flow file (+FILE appends).")

    def configure(self, updated: set[str]) -> None:
        if "gitvow_record" in updated:
            if self.recorder is not None:
                self.recorder.close()
                self.recorder = None
            if ctx.options.gitvow_record:
                try:
                    self.recorder = Recorder(ctx.options.gitvow_record)
                except GitvowError as exc:
                    raise exceptions.OptionsError(f"gitvow_record: {exc}") from None  # type: ignore[no-untyped-call]
                if self.runtime is not None:
                    self._policy_stamp = (self.runtime, policy_stamp(ctx.options.gitvow_policy))
        if "gitvow_policy" not in updated and "gitvow_state" not in updated:
            return
        if not ctx.options.gitvow_policy:
            log.warning("gitvow: no policy (set gitvow_policy); every request is refused")
            return
        try:
            self._reload(initial=True)
        except GitvowError as exc:
            raise exceptions.OptionsError(f"gitvow: {exc}") from None  # type: ignore[no-untyped-call]

    def running(self) -> None:
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        self.sender.start()
        self._start_desk()

    def _start_desk(self) -> None:
        runtime = self.runtime
        if runtime is None or self.store is None or self.desk is not None or self.admin is not None:
            return
        from gitvow_proxy.desk import start_desk

        metrics = self.metrics
        routes = {"/metrics": lambda: (CONTENT_TYPE, metrics.render())}
        try:
            self.desk = start_desk(self._policy, self.store, wake=self.sender.wake, routes=routes)
        except GitvowError as exc:
            log.error("gitvow: the approval desk is off: %s", exc)
        admin = runtime.policy.section(ProxyPolicy).admin
        if self.desk is None and admin is not None:  # no operator secret: /metrics alone
            try:
                self.admin = AdminServer(admin.address, routes, admin.hosts).start()
            except OSError as exc:
                log.error("gitvow: cannot listen at [admin] listen = %s: %s", admin.listen, exc)

    def _policy(self) -> Policy:
        assert self.runtime is not None
        return self.runtime.policy

    def done(self) -> None:
        self.sender.stop()
        if self.desk is not None:
            self.desk.stop()
        if self.admin is not None:
            self.admin.stop()
        if self._watcher is not None:
            self._watcher.cancel()
        if self.audit is not None:
            self.audit.close()
        if self.store is not None:
            self.store.close()
        if self.recorder is not None:
            self.recorder.close()

    def client_disconnected(self, client: connection.Client) -> None:
        self._auth.pop(client.id, None)
        self._known.pop(client.id, None)

    # -- policy (re)loading -------------------------------------------------------------------

    def _file_stamp(self, path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _reload(self, *, initial: bool = False) -> None:
        path = Path(ctx.options.gitvow_policy)
        stamp = self._file_stamp(path)
        if initial and self.store is not None:
            self.store.close()
            self.store = None
        if self.store is None:
            from gitvow.policy.load import load_policy

            self.store = open_state(load_policy(path, absent="skip"), ctx.options.gitvow_state or None)
        runtime = build_runtime(path, self.store, previous=None if initial else self.runtime)
        audit_path = runtime.policy.section(ProxyPolicy).audit.path
        if self.audit is None or self.audit.path != audit_path:
            old, self.audit = self.audit, AuditLog(audit_path)
            if old is not None:
                old.close()
        self.runtime, self._stamp = runtime, stamp
        if self.recorder is not None:
            self._policy_stamp = (runtime, policy_stamp(path))
        hosts = ", ".join(f"{h}→{a}" for h, a in runtime.engine.hosts.items()) or "none"
        log.info("gitvow: policy %s loaded (hosts: %s)", path, hosts)
        if initial:
            state = ctx.options.gitvow_state or runtime.policy.section(ProxyPolicy).proxy.state
            where = state if state == ":memory:" else str(Path(state).expanduser())
            audit = audit_path if audit_path == "-" else str(Path(audit_path).expanduser())
            log.info("gitvow: state store %s; audit log %s", where, audit)

    async def _watch(self) -> None:
        while True:
            interval = self.runtime.policy.section(ProxyPolicy).proxy.reload_interval if self.runtime else 1.0
            await asyncio.sleep(interval)
            path = Path(ctx.options.gitvow_policy)
            stamp = self._file_stamp(path)
            if stamp is None or stamp == self._stamp:
                continue
            try:
                self._reload()
            except GitvowError as exc:
                self._stamp = stamp
                log.warning("gitvow: kept the last good policy; %s", exc)
            except Exception as exc:  # never let the watcher die
                self._stamp = stamp
                log.warning("gitvow: kept the last good policy; reload failed: %s: %s", type(exc).__name__, exc)

    # -- identity -----------------------------------------------------------------------------

    def _identify(self, flow: http.HTTPFlow) -> Identity | None:
        """The caller, from this request's Proxy-Authorization or its connection's CONNECT.

        Checked once per request (``requestheaders``) against the policy in force; the answer
        is kept per connection and header, and re-checked after a reload."""
        runtime = self.runtime
        assert runtime is not None
        conn = flow.client_conn.id
        header = flow.request.headers.get("proxy-authorization") or self._auth.get(conn, "")
        if not header:
            return None
        known = self._known.get(conn)
        if known is not None and known[0] == header and known[1] is runtime:
            return known[2]
        identity = runtime.identities.authenticate(header)
        if identity is not None:
            self._known[conn] = (header, runtime, identity)
        return identity

    def http_connect(self, flow: http.HTTPFlow) -> None:
        runtime = self.runtime
        if runtime is None:
            flow.response = _refusal(503, "gitvow has no valid policy loaded", INTERNAL_ERROR)
            return
        identity = self._identify(flow)
        if identity is None:
            flow.response = _refusal(407, "gitvow: proxy authentication required", "proxy_auth",
                                     **{"Proxy-Authenticate": PROXY_AUTHENTICATE})
            self._audit(flow, None, "refuse", "proxy_auth", "identity", 0.0)
            return
        self._auth[flow.client_conn.id] = flow.request.headers["proxy-authorization"]
        host, port = flow.request.host, flow.request.port
        if runtime.engine.hosts.lookup(host, port) is None:
            if runtime.policy.section(ProxyPolicy).proxy.other_hosts == "refuse":
                flow.response = _refusal(403, f"gitvow refused a tunnel to {host}:{port}: no adapter serves it. "
                                         f"reason={HOST_NOT_SERVED}", HOST_NOT_SERVED)
                self._audit(flow, identity.name, "deny", HOST_NOT_SERVED, "host", 0.0)
            else:
                self._audit(flow, identity.name, "tunnel", None, "host", 0.0)

    def tls_clienthello(self, data: tls.ClientHelloData) -> None:
        """Intercept only what an adapter serves and asks to see; tunnel the rest untouched."""
        address = data.context.server.address
        host, port = (address[0], address[1]) if address else (data.client_hello.sni or "", 443)
        runtime = self.runtime
        if runtime is not None and not runtime.engine.hosts.intercepts(host, port):
            data.ignore_connection = True

    # -- the pipeline -------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Refuse unauthenticated requests before their body is read."""
        if APPROVAL_KEY in flow.metadata:  # an approved request the sender replays: no agent sent it
            return
        if self.runtime is None:
            flow.response = _refusal(503, "gitvow has no valid policy loaded", INTERNAL_ERROR)
        else:
            identity = self._identify(flow)
            if identity is None:
                flow.response = _refusal(407, "gitvow: proxy authentication required", "proxy_auth",
                                         **{"Proxy-Authenticate": PROXY_AUTHENTICATE})
                self._audit(flow, None, "refuse", "proxy_auth", "identity", 0.0)
            else:
                flow.metadata[_IDENTITY_KEY] = (identity, self.runtime)

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        started = time.perf_counter()
        runtime = self.runtime
        try:
            assert runtime is not None
            proven = flow.metadata.get(_IDENTITY_KEY)
            identity: Identity | None
            if APPROVAL_KEY in flow.metadata:
                identity = Identity(flow.metadata[APPROVAL_KEY][1])
            else:
                identity = proven[0] if proven is not None and proven[1] is runtime else self._identify(flow)
            if identity is None:  # requestheaders answered already; never forward
                flow.response = _refusal(407, "gitvow: proxy authentication required", "proxy_auth")
                return
            if self._transport_refused(runtime, flow, identity.name, started):
                return
            try:
                request, decision = self._decide(runtime, flow, identity)
            except Pending as pending:
                # A repository gate needs what only the forge knows: ask it off the event loop,
                # then decide again (the answer, or the failure, is cached now).
                await asyncio.to_thread(self._resolve, runtime, flow, pending)
                request, decision = self._decide(runtime, flow, identity)
        except Exception as exc:
            log.error("gitvow: refusing %s %s: %s: %s", flow.request.method, flow.request.path.split("?")[0],
                      type(exc).__name__, exc)
            flow.response = _refusal(403, f"gitvow refused the request: internal error ({type(exc).__name__}). "
                                     f"reason={INTERNAL_ERROR}", INTERNAL_ERROR)
            if APPROVAL_KEY in flow.metadata:
                flow.metadata[REFUSED_KEY] = f"internal error ({type(exc).__name__})"
            self._audit(flow, None, "deny", INTERNAL_ERROR, "proxy", time.perf_counter() - started)
            return
        try:
            self._apply(runtime, flow, request, identity, decision, time.perf_counter() - started)
        except Exception as exc:  # staging, shaping or auditing failed: refuse, never pass it on
            log.error("gitvow: refusing %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)
            flow.response = _refusal(403, f"gitvow refused the request: internal error ({type(exc).__name__}). "
                                     f"reason={INTERNAL_ERROR}", INTERNAL_ERROR)
        finally:
            if APPROVAL_KEY in flow.metadata and flow.response is not None:
                # whatever answered an approved request here is gitvow, not the forge: not sent
                flow.metadata.setdefault(REFUSED_KEY, flow.response.get_text(strict=False) or "refused")

    def _transport_refused(self, runtime: Runtime, flow: http.HTTPFlow, agent: str | None, started: float) -> bool:
        """Refuse what would carry the credential in clear, or what no adapter can read."""
        req = flow.request
        if runtime.engine.hosts.lookup(req.host, req.port) is None:
            return False
        settings = runtime.policy.section(ProxyPolicy).proxy
        code = why = None
        if req.scheme != "https" and not settings.plain(req.host, req.port):
            code, why = INSECURE_UPSTREAM, (f"{req.host}:{req.port} is served over plain http, which would send the "
                                            "forge credential in clear; use https (or mark the host in [proxy] plain_hosts)")
        elif "upgrade" in req.headers:
            code, why = UNSUPPORTED_PROTOCOL, "protocol upgrades (websockets, h2c) to a forge host are not inspected"
        if code is None:
            return False
        flow.response = _refusal(403, f"gitvow refused {req.method} {req.path.split('?')[0]}: {why}. reason={code}", code)
        self._audit(flow, agent, "deny", code, "transport", time.perf_counter() - started)
        return True

    def _resolve(self, runtime: Runtime, flow: http.HTTPFlow, pending: Pending) -> None:
        """Worker thread: resolve the targets a gate asked for, through the request's adapter."""
        request = self._request(flow)
        adapter = runtime.engine.hosts.lookup(request.host, request.port)
        if adapter is None:
            return
        token = runtime.gates.credentials.get(adapter.name)
        resolve_pending(pending, runtime.gates.resolutions, adapter, request, token, self._upstream_tls(runtime))

    def _upstream_tls(self, runtime: Runtime) -> ssl.SSLContext:
        extra = runtime.policy.section(ProxyPolicy).proxy.upstream_ca
        if not extra:
            extra = getattr(ctx.options, "ssl_verify_upstream_trusted_ca", None) or None
        if self._tls is None or self._tls[0] != extra:
            self._tls = (extra, tls_context(extra))
        return self._tls[1]

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        """A raw TCP stream to a served host carries nothing an adapter can read: cut it."""
        self._kill_unread(flow)

    def udp_start(self, flow: udp.UDPFlow) -> None:
        self._kill_unread(flow)

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        """Upgrades are refused in ``request``; this is the backstop if one got through."""
        self._kill_unread(flow)

    def _kill_unread(self, flow: tcp.TCPFlow | udp.UDPFlow | http.HTTPFlow) -> None:
        runtime = self.runtime
        address = flow.server_conn.address
        if address is None:
            return
        if runtime is None or runtime.engine.hosts.lookup(address[0], address[1]) is not None:
            flow.kill()  # type: ignore[no-untyped-call]
            self._audit(("STREAM", f"{address[0]}:{address[1]}", ""), None, "deny", UNSUPPORTED_PROTOCOL,
                        "transport", 0.0)

    def _request(self, flow: http.HTTPFlow) -> Request:
        req = flow.request
        path, _, query = req.path.partition("?")
        return Request(
            method=req.method,
            host=req.host.lower(),
            path=path,
            query=query,
            # mitmproxy's Headers is a case-insensitive mapping: adapters look names up, so it is
            # passed as it is rather than copied (decide runs before any header is rewritten).
            headers=req.headers,
            body=req.raw_content or b"",
            port=req.port,
            scheme=req.scheme,
        )

    def _decide(self, runtime: Runtime, flow: http.HTTPFlow, identity: Identity) -> tuple[Request, Decision]:
        req = flow.request
        if req.stream:
            raise GitvowError("the request body is streamed and cannot be inspected")
        request = self._request(flow)
        if identity.internal:
            caller = Caller(identity.name, internal=True)
        else:
            grant = runtime.grant_for(identity.name)
            if grant is None:
                raise GitvowError(f"agent {identity.name!r} has no grant")
            caller = Caller(identity.name, grant, approved=APPROVAL_KEY in flow.metadata)
        return request, runtime.engine.decide(request, caller, runtime.gates)

    def _apply(
        self, runtime: Runtime, flow: http.HTTPFlow, request: Request, identity: Identity, decision: Decision, took: float
    ) -> None:
        note = runtime.gates.take_note()
        action = decision.action
        where = (request.method, f"{request.host}:{request.port}", request.path)
        if action is Action.FORWARD:
            # One pass over the raw header fields: drop the agent's credentials (and its proxy
            # identity), add the adapter's.
            drop = {b"authorization", b"proxy-authorization", *(name.lower().encode() for name in decision.headers)}
            fields = [(k, v) for k, v in flow.request.headers.fields if k.lower() not in drop]
            fields += [(name.encode(), value.encode()) for name, value in decision.headers.items()]
            flow.request.headers.fields = tuple(fields)
            if decision.headers:
                # The token, each header value, and each value's credential part ("Basic <this>").
                values = [v.encode() for v in decision.headers.values()]
                parts = [v.split(b" ", 1)[1] for v in values if b" " in v]
                flow.metadata[_SECRETS_KEY] = (*runtime.needles, *values, *parts)
            flow.metadata[_SENT_KEY] = (decision.adapter or "", time.time())
        elif action is Action.TUNNEL:
            flow.request.headers.pop("proxy-authorization", None)
            if runtime.policy.section(ProxyPolicy).proxy.other_hosts == "refuse" or APPROVAL_KEY in flow.metadata:
                flow.response = _refusal(403, f"gitvow refused a request to {request.host}: no adapter serves it. "
                                         f"reason={HOST_NOT_SERVED}", HOST_NOT_SERVED)
                self._audit(where, identity.name, "deny", HOST_NOT_SERVED, "host", took, flow=flow, runtime=runtime)
                return
        elif decision.staged and APPROVAL_KEY not in flow.metadata:
            self._staged(runtime, flow, request, identity, decision, took)
            return
        else:
            message = decision.message or "gitvow refused the request"
            if APPROVAL_KEY in flow.metadata:
                flow.metadata[REFUSED_KEY] = message
            status, headers = decision.status, dict(decision.headers)
            if decision.reason == STATE_UNAVAILABLE:  # not the agent's fault: "come back later"
                status, headers = 503, {**headers, "Retry-After": str(UNAVAILABLE_RETRY)}
            flow.response = self._shaped_refusal(runtime, request, decision.adapter, status, message,
                                                 decision.reason or INTERNAL_ERROR, headers)
        verdict = _VERDICTS.get(action, "tunnel")
        self._audit(where, identity.name, verdict, decision.reason, decision.stage, took, decision=decision, note=note,
                    flow=flow, runtime=runtime)

    def _shaped_refusal(self, runtime: Runtime, request: Request, adapter: str | None, status: int, message: str, code: str,
                 headers: dict[str, str]) -> http.Response:
        """A refusal in the shape the adapter's clients print; the plain line if the adapter fails."""
        content_type, body = refusal.plain(message)
        plugin = runtime.engine.adapters.get(adapter) if adapter else None
        if plugin is not None:
            try:
                content_type, body = plugin.refusal_body(request, message, code)
            except Exception as exc:
                log.error("gitvow: adapter %r raised in refusal_body: %s: %s", adapter, type(exc).__name__, exc)
        return http.Response.make(status, body, {**headers, "Content-Type": content_type})

    # -- the approval relay ---------------------------------------------------------------------

    def _staged(
        self, runtime: Runtime, flow: http.HTTPFlow, request: Request, identity: Identity, decision: Decision, took: float
    ) -> None:
        """Stage the refused request for a human (or find it staged already) and answer with its state."""
        assert self.store is not None and decision.verdict is not None and decision.classification is not None
        now = time.time()
        req = flow.request
        url = f"{req.scheme}://{req.host}:{req.port}{req.path}"
        body = req.raw_content or b""
        candidate = approvals.Approval(
            id=approvals.new_id(),
            fingerprint=approvals.fingerprint(identity.name, req.method, url, body),
            agent=identity.name,
            operations=decision.classification.operations,
            repo=decision.classification.repo,
            adapter=decision.adapter or "",
            method=req.method,
            url=url,
            headers=tuple(approvals.kept_headers(list(req.headers.items(multi=True)))),  # type: ignore[no-untyped-call]
            body=body,
            created=now,
            expires=now + runtime.policy.section(ProxyPolicy).approvals.ttl,
        )
        approval = self.store.stage(candidate, now)
        where = (request.method, f"{request.host}:{request.port}", request.path)
        if approval.id == candidate.id and self.audit is not None:
            audit_approval(self.audit, approval, "staged", reason=decision.reason)
        headers = {denial.APPROVAL_HEADER: approval.id}
        if approval.status == approvals.SENT:
            # The agent's identical retry after the send: the recorded answer, never a second send.
            flow.response = http.Response.make(
                approval.response_status or 200, approval.response_body,
                {"Content-Type": approval.response_type or "application/octet-stream", **headers},
            )
            if self.audit is not None:
                audit_approval(self.audit, approval, "answered")
            return
        verdict: Verdict = decision.verdict
        if approval.status == approvals.REJECTED:
            why = f"approval {approval.id} was rejected by {approval.decided_by}" + (
                f": {approval.reason}" if approval.reason else "")
            verdict = Verdict.deny(APPROVAL_REJECTED, why, operation=decision.verdict.operation)
        elif approval.status == approvals.EXPIRED:
            verdict = Verdict.deny(APPROVAL_EXPIRED, f"approval {approval.id} expired before a human answered it",
                                   operation=decision.verdict.operation)
            if self.audit is not None:
                audit_approval(self.audit, approval, "expired", reason=APPROVAL_EXPIRED)
        adapter = runtime.engine.adapters.get(decision.adapter or "")
        message = runtime.engine.message(verdict, decision.classification, adapter, f"{request.method} {request.path}",
                                         approval=approval.id)
        code = verdict.code or INTERNAL_ERROR
        headers[denial.REASON_HEADER] = code
        flow.response = self._shaped_refusal(runtime, request, decision.adapter, 403, message, code, headers)
        self._audit(where, identity.name, "deny", code, decision.stage, took, decision=decision)

    # -- responses: the injected token never reaches the agent --------------------------------

    def response(self, flow: http.HTTPFlow) -> None:
        sent = flow.metadata.get(_SENT_KEY)
        if sent is not None and flow.response is not None:
            self.metrics.upstream(sent[0], (flow.response.timestamp_end or time.time()) - sent[1])
        self._scrub(flow)
        if APPROVAL_KEY in flow.metadata:
            self.sender.answered(flow)
        if self.recorder is not None:
            self._record(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        if APPROVAL_KEY in flow.metadata:
            self.sender.answered(flow)
        if self.recorder is not None:
            self._record(flow)

    def _scrub(self, flow: http.HTTPFlow) -> None:
        secrets = flow.metadata.get(_SECRETS_KEY)
        if not secrets or flow.response is None:
            return
        response = flow.response
        needles = [s for s in secrets if s]
        fields = response.headers.fields
        if any(n in value for _, value in fields for n in needles):
            response.headers.fields = tuple(
                (name, REDACTED if any(n in value for n in needles) else value) for name, value in fields
            )
        try:
            content = response.content if "content-encoding" in response.headers else response.raw_content
        except ValueError:  # an encoding mitmproxy cannot decode: refuse to pass what we cannot check
            flow.response = _refusal(502, "gitvow could not check the upstream response", INTERNAL_ERROR)
            return
        if content and any(n in content for n in needles):
            for n in needles:
                content = content.replace(n, REDACTED)
            response.content = content
            log.warning("gitvow: redacted an injected credential from a response of %s", flow.request.host)

    # -- recording ----------------------------------------------------------------------------

    def _redactor(self, runtime: Runtime) -> tuple[Redactor, dict[str, str]]:
        """The secrets of the policy that decided (and the canaries the store issued)."""
        cached = self._redactor_cache
        if cached is not None and cached[0] is runtime:
            return cached[1], cached[2]
        settings = runtime.policy.section(ProxyPolicy)
        canaries = self.store.canaries() if self.store is not None else {}
        redactor = Redactor.build(
            secrets=(*runtime.secrets, *runtime.identities.secrets()),
            canaries=canaries,
            literal=tuple(settings.canary.tokens),
        )
        known = self._policy_stamp
        stamp = known[1] if known is not None and known[0] is runtime else {"path": runtime.source or "", "sha256": ""}
        self._redactor_cache = (runtime, redactor, stamp)
        return redactor, stamp

    def _record(self, flow: http.HTTPFlow) -> None:
        pending = flow.metadata.pop(_RECORD_KEY, None)
        recorder = self.recorder
        if pending is None or recorder is None:
            return
        info, injected, runtime = pending
        try:
            redactor, stamp = self._redactor(runtime)
            recorder.write(sanitized(flow, {**info, "policy": stamp}, redactor, injected))
        except Exception as exc:  # a recording that fails must not take the proxy down
            log.error("gitvow: cannot write the recording %s: %s: %s", recorder.path, type(exc).__name__, exc)

    # -- audit --------------------------------------------------------------------------------

    def _audit(
        self,
        where: http.HTTPFlow | tuple[str, str, str],
        agent: str | None,
        verdict: str,
        reason: str | None,
        stage: str,
        took: float,
        *,
        decision: Decision | None = None,
        note: str | None = None,
        flow: http.HTTPFlow | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self.metrics.decided(verdict, reason, decision.adapter if decision is not None else None, agent, took)
        if isinstance(where, http.HTTPFlow):
            where = (where.request.method, f"{where.request.host}:{where.request.port}", where.request.path)
        method, host, path = where
        classification = decision.classification if decision is not None else None
        if self.recorder is not None and flow is not None and runtime is not None and agent is not None:
            # What the audit line says, kept with the flow until its exchange ends.
            info = {"agent": agent, "verdict": verdict, "reason": reason, "stage": stage,
                    "operations": list(classification.operations) if classification else [],
                    "repo": classification.repo if classification else None}
            injected = tuple(decision.headers) if decision is not None and verdict == "allow" else ()
            flow.metadata[_RECORD_KEY] = (info, injected, runtime)
        if self.audit is None:
            return
        try:
            self.audit.write(
                agent=agent,
                host=host,
                method=method,
                path=path,
                operations=classification.operations if classification else (),
                repo=classification.repo if classification else None,
                verdict=verdict,
                reason=reason,
                stage=stage,
                latency=took,
                note=note,
            )
        except OSError as exc:
            log.error("gitvow: cannot write the audit log: %s", exc)


addons = [GitvowAddon()]

__all__ = ["GitvowAddon", "addons"]

