"""The enforcement addon: every request to an adapter's host passes the pipeline first.

TLS is intercepted only for hosts an adapter asks for; other hosts are tunnelled untouched,
or refused when ``[proxy] other_hosts = "refuse"``. A request is refused before the pipeline
when it would carry the credential in clear or cannot be read (upgrades, raw streams).
Otherwise the engine decides: a forwarded request gets the adapter's credential in place of
the agent's headers, a refusal is answered in the shape the client prints (the adapter's
``refusal_answer``: git is refused in its own protocol). A refusal the ``approval`` relay
may stage is answered with its refusal and left on the flow
(:data:`~gitvow_proxy.flow_metadata.STAGED_KEY`) for the approval relay, which replaces the
answer; without it the refusal stands (fail closed). What was decided is left for the audit
addon (:data:`~gitvow_proxy.flow_metadata.AUDIT_KEY`).
"""

from __future__ import annotations

import logging
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from mitmproxy import ctx, http, tcp, tls, udp

from gitvow.adapters.mcp import credential_name
from gitvow.errors import GitvowError
from gitvow.gates import Caller, Taken
from gitvow.pipeline import INTERNAL_ERROR, Action, Decision
from gitvow.request import Request
from gitvow_proxy.answers import Answers, LastFlags, drive
from gitvow_proxy.canary import ScanRefused
from gitvow_proxy.flow_metadata import (
    APPROVAL_KEY,
    AUDIT_KEY,
    IDENTITY_KEY,
    REFUSED_KEY,
    SECRETS_KEY,
    SENT_KEY,
    STAGED_KEY,
    Audited,
    StagedRefusal,
)
from gitvow_proxy.gates import UNAVAILABLE_RETRY
from gitvow_proxy.header_fields import HeaderFields
from gitvow_proxy.identity import Identity
from gitvow_proxy.read_memo import READS, Remembered, read_key, rememberable
from gitvow_proxy.refusals import (
    HOST_NOT_SERVED,
    INSECURE_UPSTREAM,
    UNSUPPORTED_PROTOCOL,
    plain_refusal,
    shaped_refusal,
)
from gitvow_proxy.resolver import tls_context
from gitvow_proxy.runtime import Runtime
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import STATE_UNAVAILABLE

log = logging.getLogger("gitvow_proxy")

#: Flow metadata of a forwarded write: the runtime and what its decision took from the budget.
_TAKEN_KEY = "gitvow.budget_taken"
#: The canary check's reason code (the body stage's, for trailers too).
CANARY_EGRESS = "canary_egress"
_VERDICTS = {Action.FORWARD: "allow", Action.DENY: "deny", Action.THROTTLE: "throttle"}
#: The audit verdict of a request shadow mode forwarded although the policy refuses it.
WOULD_REFUSE = "would_refuse"


def as_request(flow: http.HTTPFlow) -> Request:
    """The pipeline's view of a mitmproxy request (headers are viewed, not copied)."""
    req = flow.request
    path, _, query = req.path.partition("?")
    return Request(
        method=req.method,
        host=req.host.lower(),
        path=path,
        query=query,
        # The fields as sent, read as mitmproxy reads them but without its per-lookup cost;
        # nothing is copied, and headers rewritten after the decision are not seen.
        headers=HeaderFields(req.headers.fields),
        body=req.raw_content or b"",
        port=req.port,
        scheme=req.scheme,
    )


def _has_field(fields: tuple[tuple[bytes, bytes], ...], name: bytes) -> bool:
    """Whether a header ``name`` (lower-case) is among ``fields``: mitmproxy's ``in`` decodes
    and lower-cases each name through two calls."""
    return name in [field.lower() for field, _ in fields]  # an inlined comprehension: no generator to resume


def _audited(request: Request, agent: str | None, verdict: str, reason: str | None, stage: str, took: float,
             decision: Decision | None = None, *, note: str | None = None, runtime: Runtime | None = None,
             injected: tuple[str, ...] = ()) -> Audited:
    classification = decision.classification if decision is not None else None
    return Audited(
        request.method, f"{request.host}:{request.port}", request.path, agent, verdict, reason, stage, took,
        operations=classification.operations if classification else (),
        repo=classification.repo if classification else None,
        adapter=decision.adapter if decision is not None else None,
        note=note, runtime=runtime, injected=injected,
    )


def _flow_audited(flow: http.HTTPFlow, agent: str | None, verdict: str, reason: str, stage: str,
                  took: float) -> Audited:
    req = flow.request
    return Audited(req.method, f"{req.host}:{req.port}", req.path, agent, verdict, reason, stage, took)


#: The agent's credentials, never forwarded: its forge header and its proxy identity.
_DROPPED = frozenset({b"authorization", b"proxy-authorization"})


def _injection(runtime: Runtime, fields: tuple[tuple[bytes, bytes], ...],
               decision: Decision) -> tuple[tuple[tuple[bytes, bytes], ...], tuple[bytes, ...] | None]:
    """The header fields forwarded (the agent's credentials and proxy identity dropped in one
    pass, the adapter's added) and the secrets to scrub from the response (None: none added)."""
    added = [(name.encode(), value.encode()) for name, value in decision.headers.items()]
    drop = _DROPPED.union([name.lower() for name, _ in added]) if added else _DROPPED
    kept = [field for field in fields if field[0].lower() not in drop]
    if not added:
        return tuple(kept), None
    # The token, each header value, and each value's credential part ("Basic <this>").
    values = [value for _, value in added]
    parts = [value.split(b" ", 1)[1] for value in values if b" " in value]
    return (*kept, *added), (*runtime.needles, *values, *parts)


def _inject(runtime: Runtime, flow: http.HTTPFlow, decision: Decision) -> None:
    """Drop the agent's credentials (and its proxy identity); add the adapter's."""
    fields, secrets = _injection(runtime, flow.request.headers.fields, decision)
    _forward(flow, fields, secrets, decision.adapter or "")


def _forward(flow: http.HTTPFlow, fields: tuple[tuple[bytes, bytes], ...], secrets: tuple[bytes, ...] | None,
             adapter: str) -> None:
    flow.request.headers.fields = fields
    if secrets is not None:
        flow.metadata[SECRETS_KEY] = secrets
    flow.metadata[SENT_KEY] = (adapter, time.time())


def _remembered(runtime: Runtime, flow: http.HTTPFlow, request: Request, agent: str,
                decision: Decision) -> Remembered:
    """What applying a read's ``decision`` to ``flow`` gives, for the same request again."""
    fields, secrets = _injection(runtime, flow.request.headers.fields, decision)
    classification = decision.classification
    operations = classification.operations if classification is not None else ()
    repo = classification.repo if classification is not None else None
    host, path, injected = f"{request.host}:{request.port}", request.path, tuple(decision.headers)
    method, reason, stage, adapter = request.method, decision.reason, decision.stage, decision.adapter

    def audit(took: float) -> Audited:
        return Audited(method, host, path, agent, "allow", reason, stage, took, operations=operations, repo=repo,
                       adapter=adapter, runtime=runtime, injected=injected)

    return Remembered(decision, fields, secrets, adapter or "", audit)


def _refund(runtime: Runtime, taken: Taken) -> None:
    """Store worker: a write the forge did not perform gives its budget back."""
    try:
        runtime.gates.give_back(taken)
    except Exception as exc:  # nothing waits for this: say it, never raise into the executor
        log.warning("gitvow: a failed write's budget could not be given back: %s: %s", type(exc).__name__, exc)


def _internal_error(flow: http.HTTPFlow, exc: Exception) -> None:
    flow.response = plain_refusal(403, f"gitvow refused the request: internal error ({type(exc).__name__}). "
                                  f"reason={INTERNAL_ERROR}", INTERNAL_ERROR)


class PolicyEnforcement:
    """Transport checks, the pipeline's decision, and applying it to the flow."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        #: Decisions that reach the state store run here, one at a time, never on the event loop.
        self._store_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitvow-store")
        self._tls: tuple[str | None, ssl.SSLContext] | None = None  # upstream CA → context for lookups
        self._flags: LastFlags | None = None

    # -- connections --------------------------------------------------------------------------

    def http_connect(self, flow: http.HTTPFlow) -> None:
        """A tunnel to a host no adapter serves: tunnelled untouched, or refused by policy."""
        proven = flow.metadata.get(IDENTITY_KEY)
        runtime = self.shared.runtime
        if flow.response is not None or proven is None or runtime is None:
            return
        agent = proven[0].name
        host, port = flow.request.host, flow.request.port
        if runtime.engine.hosts.lookup(host, port) is not None:
            return
        if runtime.policy.section(ProxyPolicy).proxy.other_hosts == "refuse":
            flow.response = plain_refusal(403, f"gitvow refused a tunnel to {host}:{port}: no adapter serves it. "
                                          f"reason={HOST_NOT_SERVED}", HOST_NOT_SERVED)
            flow.metadata[AUDIT_KEY] = _flow_audited(flow, agent, "deny", HOST_NOT_SERVED, "host", 0.0)
        else:
            flow.metadata[AUDIT_KEY] = Audited(flow.request.method, f"{host}:{port}", flow.request.path, agent,
                                               "tunnel", None, "host")

    def tls_clienthello(self, data: tls.ClientHelloData) -> None:
        """Intercept only what an adapter serves and asks to see; tunnel the rest untouched."""
        address = data.context.server.address
        host, port = (address[0], address[1]) if address else (data.client_hello.sni or "", 443)
        runtime = self.shared.runtime
        if runtime is not None and not runtime.engine.hosts.intercepts(host, port):
            data.ignore_connection = True

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        """A raw TCP stream to a served host carries nothing an adapter can read: cut it."""
        self._kill_unread(flow)

    def udp_start(self, flow: udp.UDPFlow) -> None:
        self._kill_unread(flow)

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        """Upgrades are refused in ``request``; this is the backstop if one got through."""
        self._kill_unread(flow)

    def _kill_unread(self, flow: tcp.TCPFlow | udp.UDPFlow | http.HTTPFlow) -> None:
        runtime = self.shared.runtime
        address = flow.server_conn.address
        if address is None:
            return
        if runtime is None or runtime.engine.hosts.lookup(address[0], address[1]) is not None:
            flow.kill()  # type: ignore[no-untyped-call]
            flow.metadata[AUDIT_KEY] = Audited("STREAM", f"{address[0]}:{address[1]}", "", None, "deny",
                                               UNSUPPORTED_PROTOCOL, "transport")

    # -- requests -------------------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        started = time.perf_counter()
        try:
            decided = await self._decided(flow, started)
        except Exception as exc:
            log.error("gitvow: refusing %s %s: %s: %s", flow.request.method, flow.request.path.split("?")[0],
                      type(exc).__name__, exc)
            _internal_error(flow, exc)
            if APPROVAL_KEY in flow.metadata:
                flow.metadata[REFUSED_KEY] = f"internal error ({type(exc).__name__})"
            flow.metadata[AUDIT_KEY] = _flow_audited(flow, None, "deny", INTERNAL_ERROR, "proxy",
                                                     time.perf_counter() - started)
            return
        if decided is None:
            return
        runtime, request, identity, decision = decided
        try:
            self._apply(runtime, flow, request, identity, decision, time.perf_counter() - started)
        except Exception as exc:  # shaping or applying failed: refuse, never pass it on
            log.error("gitvow: refusing %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)
            _internal_error(flow, exc)

    async def _decided(self, flow: http.HTTPFlow, started: float) -> tuple[Runtime, Request, Identity,
                                                                          Decision] | None:
        """The pipeline's decision, or None when the request was answered already.

        A read decided before under the same policy, byte for byte the same request from the
        same agent, is answered from :mod:`~gitvow_proxy.read_memo`. A request that writes
        reaches the state store (pauses, budget) without the event loop ever waiting on it
        (:mod:`~gitvow_proxy.answers`): reads, which never touch it, keep their latency while the store
        hangs, and writes are refused with ``state_unavailable`` within the store's time bound."""
        proven = flow.metadata.get(IDENTITY_KEY)
        runtime = self.shared.runtime
        if proven is None or runtime is None or proven[1] is not runtime:
            raise GitvowError("the request reached the pipeline without a caller proven under the policy in force")
        identity: Identity = proven[0]
        if self._transport_refused(runtime, flow, identity.name, started):
            return None
        if self._trailers_refused(runtime, flow, identity.name, started):
            return None
        if flow.request.stream:
            raise GitvowError("the request body is streamed and cannot be inspected")
        memo = runtime.engine.memo
        key = read_key(flow, identity.name) if not identity.internal and APPROVAL_KEY not in flow.metadata else None
        if key is not None:
            remembered = memo.get(READS, key)
            if isinstance(remembered, Remembered):  # decided before, byte for byte: applied as it was then
                _forward(flow, remembered.fields, remembered.secrets, remembered.adapter)
                flow.metadata[AUDIT_KEY] = remembered.audit(time.perf_counter() - started)
                return None
        request, caller = self._inputs(runtime, flow, identity)
        answers = Answers(runtime.engine, runtime.gates, request, self._store_worker, self._last_flags(runtime),
                          lambda: self._upstream_tls(runtime))
        decision = await drive(runtime.engine.judge(request, caller, runtime.gates), answers)
        classification = decision.classification
        if key is not None and classification is not None and decision.note is None \
                and rememberable(classification, decision):
            memo.put(READS, key, _remembered(runtime, flow, request, identity.name, decision))
        return runtime, request, identity, decision

    def _last_flags(self, runtime: Runtime) -> LastFlags:
        """The run-time flags read last under the policy in force (a reload starts afresh)."""
        last = self._flags
        if last is None or last.owner is not runtime:
            last = self._flags = LastFlags(runtime)
        return last

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
        elif _has_field(req.headers.fields, b"upgrade"):
            code, why = UNSUPPORTED_PROTOCOL, "protocol upgrades (websockets, h2c) to a forge host are not inspected"
        if code is None:
            return False
        flow.response = plain_refusal(403, f"gitvow refused {req.method} {req.path.split('?')[0]}: {why}. "
                                      f"reason={code}", code)
        flow.metadata[AUDIT_KEY] = _flow_audited(flow, agent, "deny", code, "transport", time.perf_counter() - started)
        return True

    def _trailers_refused(self, runtime: Runtime, flow: http.HTTPFlow, agent: str | None, started: float) -> bool:
        """The canary check over the request's trailers (HTTP/2), which the pipeline's request
        does not carry: a secret there is refused as in the body."""
        trailers = flow.request.trailers
        scanner = runtime.gates.scanner
        if not trailers or not scanner:
            return False
        text = b"\n".join(name + b": " + value for name, value in trailers.fields)
        try:
            found = scanner.find(text) is not None
            why = "the request's trailers carry a secret that must never leave"
        except ScanRefused as exc:
            found, why = True, f"the request's trailers could not be checked for secrets: {exc}"
        if not found:
            return False
        req = flow.request
        flow.response = plain_refusal(403, f"gitvow refused {req.method} {req.path.split('?')[0]}: {why}. "
                                      f"reason={CANARY_EGRESS}", CANARY_EGRESS)
        flow.metadata[AUDIT_KEY] = _flow_audited(flow, agent, "deny", CANARY_EGRESS, "body",
                                                 time.perf_counter() - started)
        return True

    # -- a forwarded write the forge did not perform takes nothing from the budget -------------

    def response(self, flow: http.HTTPFlow) -> None:
        taken = flow.metadata.pop(_TAKEN_KEY, None)
        if taken is not None and flow.response is not None and flow.response.status_code >= 400:
            self._give_back(*taken)

    def error(self, flow: http.HTTPFlow) -> None:
        taken = flow.metadata.pop(_TAKEN_KEY, None)
        if taken is not None:  # no answer: nothing was performed
            self._give_back(*taken)

    def _give_back(self, runtime: Runtime, taken: Taken) -> None:
        """The refund reaches the store on its worker, after the decisions queued before it; the
        answer goes to the client now, whatever the store does."""
        self._store_worker.submit(_refund, runtime, taken)

    def _upstream_tls(self, runtime: Runtime) -> ssl.SSLContext:
        extra = runtime.policy.section(ProxyPolicy).proxy.upstream_ca
        if not extra:
            extra = getattr(ctx.options, "ssl_verify_upstream_trusted_ca", None) or None
        if self._tls is None or self._tls[0] != extra:
            self._tls = (extra, tls_context(extra))
        return self._tls[1]

    def _inputs(self, runtime: Runtime, flow: http.HTTPFlow, identity: Identity) -> tuple[Request, Caller]:
        """The pipeline's request and caller (a streamed body was refused before, in :meth:`_decided`)."""
        return as_request(flow), self._caller(runtime, identity, APPROVAL_KEY in flow.metadata)

    @staticmethod
    def _caller(runtime: Runtime, identity: Identity, approved: bool) -> Caller:
        """The caller of a request: the agent's name, its grant in ``runtime`` and the approval flag."""
        if identity.internal:
            return Caller(identity.name, internal=True)
        grant = runtime.grant_for(identity.name)
        if grant is None:
            raise GitvowError(f"agent {identity.name!r} has no grant")
        return Caller(identity.name, grant, approved=approved)

    def _apply(self, runtime: Runtime, flow: http.HTTPFlow, request: Request, identity: Identity, decision: Decision,
               took: float) -> None:
        action, note, taken = decision.action, decision.note, decision.taken
        if action is Action.FORWARD:
            _inject(runtime, flow, decision)
            if taken is not None:
                flow.metadata[_TAKEN_KEY] = (runtime, taken)
        elif action is Action.TUNNEL:
            flow.request.headers.pop("proxy-authorization", None)
            if runtime.policy.section(ProxyPolicy).proxy.other_hosts == "refuse" or APPROVAL_KEY in flow.metadata:
                flow.response = plain_refusal(403, f"gitvow refused a request to {request.host}: no adapter serves "
                                              f"it. reason={HOST_NOT_SERVED}", HOST_NOT_SERVED)
                flow.metadata[AUDIT_KEY] = _audited(request, identity.name, "deny", HOST_NOT_SERVED, "host", took,
                                                    runtime=runtime)
                return
        elif identity.name in runtime.shadowed and not identity.internal and APPROVAL_KEY not in flow.metadata:
            self._pass_in_shadow(runtime, flow, request, identity, decision, took, note)
            return
        else:
            self._refuse(runtime, flow, request, identity, decision, took)
        injected = tuple(decision.headers) if action is Action.FORWARD else ()
        flow.metadata[AUDIT_KEY] = _audited(request, identity.name, _VERDICTS.get(action, "tunnel"), decision.reason,
                                            decision.stage, took, decision, note=note, runtime=runtime,
                                            injected=injected)

    def _pass_in_shadow(self, runtime: Runtime, flow: http.HTTPFlow, request: Request, identity: Identity,
                        decision: Decision, took: float, note: str | None) -> None:
        """Shadow mode: forward what would be refused, with the credential, and say so in the audit."""
        adapter = runtime.engine.hosts.lookup(request.host, request.port)
        token = runtime.gates.credentials.get(credential_name(adapter)) if adapter is not None else None
        headers = dict(adapter.credential_headers(request, token)) if adapter is not None and token else {}
        _inject(runtime, flow, replace(decision, headers=headers))
        would = "would stage for a human's approval" if decision.staged else "would refuse"
        flow.metadata[AUDIT_KEY] = _audited(request, identity.name, WOULD_REFUSE, decision.reason, decision.stage,
                                            took, decision, note=f"shadow mode: {would}" + (f"; {note}" if note else ""),
                                            runtime=runtime, injected=tuple(headers))

    def _refuse(self, runtime: Runtime, flow: http.HTTPFlow, request: Request, identity: Identity, decision: Decision,
                took: float) -> None:
        message = decision.message or "gitvow refused the request"
        replayed = APPROVAL_KEY in flow.metadata
        if replayed:
            flow.metadata[REFUSED_KEY] = message
        elif decision.staged:
            flow.metadata[STAGED_KEY] = StagedRefusal(runtime, request, identity, decision, took)
        status, headers = decision.status, dict(decision.headers)
        if decision.reason == STATE_UNAVAILABLE:  # not the agent's fault: "come back later"
            status, headers = 503, {**headers, "Retry-After": str(UNAVAILABLE_RETRY)}
        flow.response = shaped_refusal(runtime, request, decision.adapter, status, message,
                                       decision.reason or INTERNAL_ERROR, headers)


__all__ = ["PolicyEnforcement", "as_request"]
