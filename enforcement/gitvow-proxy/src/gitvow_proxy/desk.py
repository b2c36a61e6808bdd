"""The approval desk: a small server-rendered web page on the proxy's admin listener.

``[admin] listen`` (loopback by default) and an operator secret from ``secret_env`` or
``secret_file``, never an agent's: without a secret the desk is off. It lists pending
approvals with a readable rendering of what each will do and approves or rejects them; it
pauses and resumes repositories; it shows each agent's budget, recent refusals and a chart of
decisions over time by verdict and reason (an inline SVG). No JavaScript at all: plain forms.

Safety (the agent is the attacker, and it can serve web pages on this host):

- ``Host`` must be one the desk answers to (:func:`gitvow_proxy.admin.allowed_hosts`) on
  every route, ``/metrics`` and ``/login`` included: DNS rebinding reaches the port, never a page.
- Every state change (sign-in, sign-out, approve, reject, pause, resume) needs this desk's
  ``Origin`` (or, without one, ``Sec-Fetch-Site: same-origin``) and, once signed in, the
  session's CSRF token.
- A session lives at ``/s/KEY/``: the cookie (``HttpOnly``, ``SameSite=Strict``, 12 hours) is
  scoped to that path and opens nothing without the key (see :class:`Session`). Cookies are not
  isolated by port, the key is.
- Failed sign-ins are throttled per listener (:class:`SignInThrottle`); the secret is compared
  in constant time.
- A page's message comes from the session, never from the URL.

Decisions are store operations, exactly as ``gitvow approvals approve`` makes them; the
proxy's sender is woken to send at once.
"""

from __future__ import annotations

import hmac
import html
import logging
import re
import secrets
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gitvow.approval_context import DIFF_LIMIT, ApprovalContext
from gitvow.errors import GitvowError
from gitvow.policy.load import Policy
from gitvow_proxy.admin import Routes, allowed_hosts, host_allowed
from gitvow_proxy.approval_context import stored_context
from gitvow_proxy.approvals import FAILED, PENDING, SENDING, Approval
from gitvow_proxy.audit import AuditLog, audit_approval
from gitvow_proxy.identity import read_secret
from gitvow_proxy.notify import delivery_state
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.status import SPANS, gather
from gitvow_proxy.store import PAUSED, Store

log = logging.getLogger("gitvow_proxy")

COOKIE = "gitvow_desk"
SESSION_SECONDS = 12 * 3600
FAILED_SIGN_IN_DELAY = 0.5
#: Failed sign-ins the listener hears in ``SIGN_IN_WINDOW`` seconds before it answers 429.
SIGN_IN_FAILURES = 5
SIGN_IN_WINDOW = 60.0
DESK_TITLE = "gitvow approval desk"
SIGN_IN_TITLE = "gitvow approval desk: sign in"
ALLOW_COLOUR = "#2e7d32"
_PALETTE = ("#c62828", "#ef6c00", "#6a1b9a", "#1565c0", "#00838f", "#ad1457", "#5d4037", "#455a64",
            "#9e9d24", "#283593", "#d84315", "#00695c")
#: The reasons seen most often, each with a colour of its own; others by a hash of their name.
_FIXED_COLOURS = {
    "deny: hard_deny": "#c62828", "deny: mode_denied": "#ef6c00", "throttle: write_budget": "#6a1b9a",
    "deny: repo_paused": "#1565c0", "deny: agent_repo_scope": "#00838f", "deny: canary_egress": "#ad1457",
    "deny: issue_shape": "#5d4037", "refuse: proxy_auth": "#455a64", "deny: repo_unresolved": "#9e9d24",
    "deny: repo_not_in_config": "#283593", "deny: approval_rejected": "#d84315", "deny: internal_error": "#000000",
}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(at: float | None) -> str:
    """A timestamp as one unbreakable piece of text (``<time>`` is ``white-space: nowrap``)."""
    if at is None:
        return "-"
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    return f"<time datetime='{iso}'>{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(at))}</time>"


@dataclass(slots=True)
class Session:
    """One operator's signed-in session.

    ``key`` is in every desk URL (``/s/KEY/``) and ``token`` in a cookie scoped to that path:
    browsers send a host's cookies to every port of it, so a page the agent serves on another
    loopback port would receive a cookie scoped to ``/``; it never learns ``key`` (the desk's
    URLs are not sent to other origins: ``Referrer-Policy: same-origin``), and without it the
    cookie opens nothing. Both are compared in constant time.
    """

    key: str
    token: str
    operator: str
    csrf: str
    expires: float
    #: The result of the last action, shown once by the next page (never taken from the URL).
    flash: str | None = None

    @property
    def base(self) -> str:
        return f"/s/{self.key}/"


class SignInThrottle:
    """Failed sign-ins of the whole listener: at most ``limit`` in ``window`` seconds, then
    every attempt (right secret or not) is answered 429 until the oldest failure ages out.
    Per listener, not per connection or thread: parallel guessers share one allowance."""

    def __init__(self, limit: int = SIGN_IN_FAILURES, window: float = SIGN_IN_WINDOW) -> None:
        self.limit, self.window = limit, window
        self._failures: deque[float] = deque()
        self._lock = threading.Lock()

    def retry_after(self, now: float) -> float:
        """Seconds until an attempt is heard again; 0 when it is heard now."""
        with self._lock:
            while self._failures and self._failures[0] <= now - self.window:
                self._failures.popleft()
            if len(self._failures) < self.limit:
                return 0.0
            return self._failures[0] + self.window - now

    def failed(self, now: float) -> None:
        with self._lock:
            self._failures.append(now)


class Desk:
    """The listener thread and its sessions."""

    def __init__(self, policy: Callable[[], Policy], store: Store, secret: str, address: tuple[str, int],
                 wake: Callable[[], None] = lambda: None, routes: Routes | None = None,
                 hosts: Collection[str] = ()) -> None:
        self.policy = policy
        self.routes = dict(routes or {})
        self.store = store
        self._secret = secret
        self.wake = wake
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.throttle = SignInThrottle()
        desk = self

        class ThisDeskHandler(_Handler):  # a class per desk: the handler reaches its desk through it
            pass

        ThisDeskHandler.desk = desk
        try:
            self.server = ThreadingHTTPServer(address, ThisDeskHandler)
        except OSError as exc:
            raise GitvowError(f"[admin] listen {address[0]}:{address[1]}: {exc.strerror or exc}") from None
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.hosts = allowed_hosts(address[0], self.port, hosts)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self._thread = threading.Thread(target=self.server.serve_forever, name="gitvow-desk", daemon=True)

    def start(self) -> Desk:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- sessions -------------------------------------------------------------------------------

    def login(self, name: str, secret: str) -> Session | None:
        if not hmac.compare_digest(secret.encode(), self._secret.encode()):
            return None
        with self._lock:
            now = time.time()
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
            session = Session(secrets.token_urlsafe(24), secrets.token_urlsafe(32), name or "operator",
                              secrets.token_urlsafe(32), now + SESSION_SECONDS)
            self._sessions[session.key] = session
        return session

    def session(self, key: str, token: str | None) -> Session | None:
        """The live session whose URL key is ``key`` and whose cookie is ``token``."""
        if not token:
            return None
        with self._lock:
            found = self._sessions.get(key)
        if found is None or found.expires <= time.time():
            return None
        if not hmac.compare_digest(found.token.encode(), token.encode()):
            return None
        return found

    def logout(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.key, None)

    def audit(self) -> AuditLog:
        return AuditLog(self.policy().section(ProxyPolicy).audit.path)

    def context(self, approval: Approval) -> ApprovalContext | None:
        """What the forge said about the approval, if the proxy asked yet."""
        return stored_context(self.store, approval.id)

    def deliveries(self, approval: Approval) -> dict[str, str]:
        """Each ``[approvals.notify]`` delivery of the approval's events → its state."""
        return delivery_state(self.store, approval.id)


class _Handler(BaseHTTPRequestHandler):
    desk: Desk
    server_version = "gitvow-desk"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines carry the session's URL key: never logged

    # -- plumbing -------------------------------------------------------------------------------

    def _token(self) -> str | None:
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                return value
        return None

    def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy",
                         "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
        self.send_header("Referrer-Policy", "same-origin")  # "no-referrer" makes form posts say Origin: null
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, where: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _form(self) -> dict[str, str]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return {}
        if not 0 <= length <= 64 * 1024:
            return {}
        raw = self.rfile.read(length).decode("utf-8", "replace")
        return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}

    def _host_allowed(self) -> bool:
        """``Host`` must name this desk (DNS rebinding): checked before every route."""
        if host_allowed(self.headers.get("Host"), self.desk.hosts):
            return True
        self._send(421, _page("Refused", "<p>This desk does not answer to that host name.</p>"))
        return False

    def _same_origin(self) -> bool:
        """A state change comes from a page of this desk: its ``Origin`` is the desk's, or (no
        ``Origin``) the browser says ``Sec-Fetch-Site: same-origin``. Neither: refused, so a
        client that sends no browser headers at all cannot change anything either."""
        origin = self.headers.get("Origin")
        if origin is not None:
            return origin.strip().lower() in self.desk.origins
        return self.headers.get("Sec-Fetch-Site", "").strip().lower() == "same-origin"

    def _session(self, path: str) -> tuple[Session | None, str]:
        """The session a ``/s/KEY/REST`` path and the cookie open, and ``REST``."""
        parts = path.split("/", 3)
        if len(parts) < 3 or parts[0] != "" or parts[1] != "s":
            return None, path
        rest = "/" + (parts[3] if len(parts) > 3 else "")
        return self.desk.session(parts[2], self._token()), rest

    # -- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if not self._host_allowed():
            return
        url = urlsplit(self.path)
        route = self.desk.routes.get(url.path)
        if route is not None:  # /metrics: read by Prometheus, no session
            content_type, data = route()
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)
            return
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/login":
            wanted = query.get("approval", "")
            self._send(200, _page(SIGN_IN_TITLE, _login_form(query.get("failed"), wanted if _ID.fullmatch(wanted) else "")))
            return
        session, rest = self._session(url.path)
        if session is None:
            self._redirect("/login")
            return
        if rest == "/":
            self._send(200, self._home(session, query))
        elif rest.startswith("/approvals/") and rest.count("/") == 2:
            approval = self.desk.store.approval(rest.rsplit("/", 1)[1])
            back = f"<p><a href='{session.base}'>Back to the desk</a></p>"
            if approval is None:
                self._send(404, _page("Not found", "<p>No such approval.</p>" + back))
            else:
                self._send(200, _page(f"Approval {approval.id}",
                                      _approval_card(approval, session, self.desk.context(approval), full=True,
                                                     deliveries=self.desk.deliveries(approval))
                                      + back))
        else:
            self._send(404, _page("Not found", f"<p><a href='{session.base}'>Back</a></p>"))

    def do_POST(self) -> None:
        if not self._host_allowed():
            return
        url = urlsplit(self.path)
        form = self._form()
        if not self._same_origin():
            self._send(403, _page("Refused", "<p>Cross-site request refused.</p>"))
            return
        if url.path == "/login":
            self._sign_in(form)
            return
        session, rest = self._session(url.path)
        if session is None:
            self._redirect("/login")
            return
        if not hmac.compare_digest(form.get("csrf", "").encode(), session.csrf.encode()):
            self._send(403, _page("Refused", f"<p>The form expired or came from elsewhere. "
                                             f"<a href='{session.base}'>Reload the desk</a>.</p>"))
            return
        if rest == "/logout":
            self.desk.logout(session)
            self._redirect("/login", {"Set-Cookie": f"{COOKIE}=; HttpOnly; SameSite=Strict; Path={session.base}; Max-Age=0"})
            return
        try:
            done = self._act(rest, form, f"{session.operator} (desk)")
        except GitvowError as exc:
            done = f"Not done: {exc}"
        session.flash = done
        self._redirect(session.base)

    def _sign_in(self, form: dict[str, str]) -> None:
        wait = self.desk.throttle.retry_after(time.time())
        if wait > 0:
            log.warning("gitvow desk: sign-in refused: too many wrong secrets lately")
            self._send(429, _page(SIGN_IN_TITLE, _login_form("throttled")), {"Retry-After": str(int(wait) + 1)})
            return
        session = self.desk.login(form.get("name", "").strip()[:64], form.get("secret", ""))
        if session is None:
            self.desk.throttle.failed(time.time())
            log.warning("gitvow desk: a sign-in with a wrong secret")
            time.sleep(FAILED_SIGN_IN_DELAY)
            self._redirect("/login?failed=1")
            return
        cookie = f"{COOKIE}={session.token}; HttpOnly; SameSite=Strict; Path={session.base}; Max-Age={SESSION_SECONDS}"
        wanted = form.get("approval", "")
        where = session.base + (f"approvals/{wanted.upper()}" if _ID.fullmatch(wanted) else "")
        self._redirect(where, {"Set-Cookie": cookie})

    def _act(self, path: str, form: dict[str, str], by: str) -> str:
        desk = self.desk
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "approvals" and parts[2] in ("approve", "reject"):
            approve = parts[2] == "approve"
            reason = form.get("reason", "").strip() or None
            if not approve and reason is None:
                return f"Not done: say why you reject {parts[1]}"
            decided = desk.store.decide(parts[1], approve=approve, by=by, reason=reason, now=time.time())
            audit = desk.audit()
            try:
                audit_approval(audit, decided, "approved" if approve else "rejected", by=by, reason=reason)
            finally:
                audit.close()
            if approve:
                desk.wake()
                return f"Approved {decided.id}: the proxy sends it upstream once."
            return f"Rejected {decided.id}."
        if path in ("/pause", "/resume"):
            repo = form.get("repo", "").strip().lower()
            if repo.count("/") < 1 or repo.startswith("/") or repo.endswith("/"):
                return "Not done: a repository is owner/name"
            why = form.get("reason", "").strip()[:500] or None
            desk.store.set_flag(PAUSED, repo, path == "/pause")
            audit = desk.audit()
            try:
                audit.write(agent=None, host="-", method="-", path="-", repo=repo, stage="run_state",
                            verdict="paused" if path == "/pause" else "resumed", by=by, note=why)
            finally:
                audit.close()
            return f"{'Paused' if path == '/pause' else 'Resumed'} {repo}."
        return "Not done: unknown action"

    def _home(self, session: Session, query: dict[str, str]) -> str:
        span = SPANS.get(query.get("span", ""), SPANS["24h"])
        data = gather(self.desk.policy(), self.desk.store, span=span)
        pending = [a for a in self.desk.store.approvals([PENDING]) if a.expires > time.time()]
        recent = [a for a in self.desk.store.approvals(limit=20) if a.status != PENDING][:10]
        done, session.flash = session.flash, None
        base = session.base
        parts = [
            f"<p class='who'>Signed in as {_e(session.operator)}. <form class='inline' method='post' "
            f"action='{base}logout'><input type='hidden' name='csrf' value='{_e(session.csrf)}'>"
            "<button>Sign out</button></form></p>",
            f"<p class='flash' role='status'>{_e(done)}</p>" if done else "",
            _shadow_banner(data["shadow"]),
            _stuck(data["stuck_approvals"]),
            f"<h2>Pending approvals ({len(pending)})</h2>",
            "".join(_approval_card(a, session, self.desk.context(a), deliveries=self.desk.deliveries(a))
                    for a in pending) or "<p class='empty'>Nothing is waiting.</p>",
            "<h2>Decisions over time</h2>",
            "<p>" + " · ".join(f"<a href='{base}?span={s}'>{s}</a>" if s != span.name else f"<b>{s}</b>"
                               for s in SPANS) + "</p>",
            _chart(data["decisions"], span.name),
            "<h2>Agents</h2>", _agents(data["agents"]),
            "<h2>Paused repositories</h2>", _paused(data["paused"], data.get("pause_reasons", {}), session),
            "<h2>Recent refusals</h2>", _refusals(data["recent_refusals"]),
            "<h2>Recently decided</h2>",
            "".join(_approval_card(a, session, self.desk.context(a), deliveries=self.desk.deliveries(a))
                    for a in recent) or "<p class='empty'>None yet.</p>",
        ]
        return _page(DESK_TITLE, "".join(parts))


# -- rendering ------------------------------------------------------------------------------------

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#1b1b1b}
h1{font-size:1.4rem}.shadow{background:#b71c1c;color:#fff;padding:.6rem .8rem;border-radius:4px}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
.card{border:1px solid #ccc;border-radius:6px;padding:.75rem 1rem;margin:.75rem 0}
.card h3{margin:.1rem 0 .5rem;font-size:1rem}
dl{display:grid;grid-template-columns:9rem 1fr;gap:.15rem .75rem;margin:.25rem 0}dt{color:#555}dd{margin:0}
time{white-space:nowrap}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;border-radius:4px;max-height:16rem;overflow:auto}
.status{font-weight:600;text-transform:uppercase;font-size:.8rem;padding:.1rem .4rem;border-radius:3px;background:#eee}
.status.pending{background:#fff3cd}.status.sent{background:#d4edda}.status.rejected,.status.failed{background:#f8d7da}
form.inline{display:inline}.actions{margin-top:.5rem;display:flex;gap:1rem;flex-wrap:wrap;align-items:center}
button{font:inherit;padding:.3rem .9rem;cursor:pointer}button.approve{background:#2e7d32;color:#fff;border:0;border-radius:4px}
button.reject{background:#c62828;color:#fff;border:0;border-radius:4px}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eee}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}.note{color:#555}
.failed-send{color:#8a1c1c}.context{border-top:1px dashed #ccc;margin-top:.5rem}.context-error{color:#8a1c1c}
pre.diff{max-height:28rem;font-size:.85rem}table.files td{font-size:.9rem}.flash{background:#e8f0fe;padding:.5rem .75rem;border-radius:4px}.empty{color:#666}.who{float:right;margin:0}
"""


def _shadow_banner(agents: list[str]) -> str:
    """Shadow mode, said loudly: these agents' refusals are recorded, not enforced."""
    if not agents:
        return ""
    return ("<p class='shadow' role='alert'><b>Shadow mode</b>: not enforcing for "
            f"{_e(', '.join(agents))}. What the policy refuses is forwarded and recorded as would_refuse.</p>")


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'><style>{_STYLE}</style></head>"
            f"<body><h1>{_e(title)}</h1>{body}</body></html>")


_ID = re.compile(r"[0-9A-Za-z]{6}")


def _login_form(state: str | None, approval: str = "") -> str:
    error = {
        "1": "<p class='flash' role='alert'>That secret is not the operator secret.</p>",
        "throttled": "<p class='flash' role='alert'>Too many wrong secrets lately: wait a minute and try again.</p>",
    }.get(state or "", "")
    return (f"<p>Sign in to review what your coding agents asked to do: gitvow holds each pull request "
            f"creation and merge here until a human approves it.</p>{error}<form method='post' action='/login'>"
            + (f"<input type='hidden' name='approval' value='{_e(approval)}'>" if approval else "")
            + "<p><label>Your name <input name='name' autocomplete='username' required></label></p>"
            "<p><label>Operator secret <input name='secret' type='password' autocomplete='current-password' required>"
            "</label></p><p><button>Sign in</button></p></form>")


_LABELS = {"title": "title", "head": "head branch", "base": "base branch", "merge method": "merge method",
           "commit title": "commit title", "draft": "draft"}


def _outcome_rows(a: Approval) -> list[tuple[str, str]]:
    """Who decided, and what the forge (or a gate) answered: a failed send is the proxy's
    outcome, never shown as the approver's reason."""
    rows: list[tuple[str, str]] = []
    if a.decided_by:
        decided = f"{_when(a.decided_at)} {'approved' if a.status != 'rejected' else 'rejected'} by {_e(a.decided_by)}"
        if a.status == "rejected" and a.reason:
            decided += f": {_e(a.reason)}"
        rows.append(("decided", decided))
    if a.status == FAILED:
        rows.append(("not sent", f"<span class='failed-send'>{_e(a.reason or 'no answer from the upstream')}</span>"))
    elif a.status == SENDING:
        rows.append(("sending", "claimed by a proxy; it is never sent twice"))
    if a.sent_at:
        rows.append(("answered", f"{_when(a.sent_at)}: {_e(a.response_status or 'no answer')}"))
    return rows


def _forge_rows(c: ApprovalContext) -> list[tuple[str, str]]:
    pull = c.pull
    rows: list[tuple[str, str]] = []
    if pull is not None:
        link = f" <a href='{_e(pull.url)}' rel='noreferrer'>on the forge</a>" if pull.url.startswith("https://") else ""
        rows += [("pull request", f"#{_e(pull.number)} <b class='pr-title'>{_e(pull.title)}</b>{link}"),
                 ("author", _e(pull.author)), ("state", _e(pull.state)), ("mergeable", _e(pull.mergeable)),
                 ("checks", f"<span class='checks'>{_e(pull.checks)}</span>"), ("reviews", _e(pull.reviews))]
    if c.head or c.base:
        rows.append(("branches", f"{_e(c.head)} → {_e(c.base)}"))
    if c.head_sha:
        rows.append(("head", f"<code class='head-sha'>{_e(c.head_sha)}</code> (an approved send is pinned to it)"))
    if c.changes is not None:
        commits = f", {c.changes.commits} commits" if c.changes.commits is not None else ""
        rows.append(("changes", f"{len(c.changes.files)} files, +{c.changes.additions} −{c.changes.deletions}{commits}"))
    return rows


def _context(c: ApprovalContext | None, *, full: bool) -> str:
    """What the forge said, or plainly that it could not be asked."""
    if c is None:
        return ""
    if c.error:
        return f"<p class='context-error' role='note'>From the forge: {_e(c.error)}</p>"
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in _forge_rows(c))
    out = f"<div class='context'><p class='note'>From the forge, {_when(c.fetched_at)}:</p><dl>{rows}</dl>"
    if full and c.changes is not None:
        files = "".join(f"<tr><td><code>{_e(f.path)}</code></td><td>{_e(f.status)}</td><td>+{_e(f.additions or 0)}</td>"
                        f"<td>−{_e(f.deletions or 0)}</td></tr>" for f in c.changes.files)
        out += ("<table class='files'><thead><tr><th>file</th><th>status</th><th>added</th><th>removed</th></tr></thead>"
                f"<tbody>{files}</tbody></table>")
        if c.changes.diff:
            cut = (f"<p class='note'>The diff is cut at {DIFF_LIMIT // 1024} KiB; the files above are all of "
                   "them.</p>") if c.changes.truncated else ""
            out += f"<p>Diff:</p><pre class='diff'>{_e(c.changes.diff)}</pre>{cut}"
    if full and c.notes:
        out += "<p class='note'>" + "; ".join(_e(n) for n in c.notes) + "</p>"
    return out + "</div>"


def _texts(a: Approval, summary: dict[str, Any], context: ApprovalContext | None, *, full: bool) -> str:
    """The pull request's body, the forge's context, and on the detail page the raw request and answer."""
    body = summary.get("body")
    text = f"<p>Body:</p><pre>{_e(body)}</pre>" if isinstance(body, str) and body else ""
    text += _context(context, full=full)
    if full:
        text += f"<p>Request body as sent:</p><pre>{_e(a.body.decode('utf-8', 'replace'))}</pre>"
        if a.response_body:
            text += f"<p>Upstream answer:</p><pre>{_e(a.response_body.decode('utf-8', 'replace'))}</pre>"
    return text


def _actions(a: Approval, session: Session) -> str:
    hidden = f"<input type='hidden' name='csrf' value='{_e(session.csrf)}'>"
    return (
        "<div class='actions'>"
        f"<form class='inline' method='post' action='{session.base}approvals/{_e(a.id)}/approve'>{hidden}"
        f"<button class='approve' name='approve' value='{_e(a.id)}'>Approve {_e(a.id)}</button></form>"
        f"<form class='inline' method='post' action='{session.base}approvals/{_e(a.id)}/reject'>{hidden}"
        f"<label>Reason <input name='reason' required placeholder='why not'></label> "
        f"<button class='reject'>Reject {_e(a.id)}</button></form></div>"
    )


def _approval_card(a: Approval, session: Session, context: ApprovalContext | None = None, *, full: bool = False,
                   deliveries: dict[str, str] | None = None) -> str:
    summary = a.summary()
    repo = a.repo or (context.repo if context is not None else None)
    rows = [
        ("agent", _e(a.agent)), ("operation", _e(", ".join(a.operations))), ("repository", _e(repo or "-")),
        ("request", _e(f"{a.target} on {a.url.split('://', 1)[-1].partition('/')[0]}")),
        ("staged", _when(a.created)),
    ]
    if a.status == PENDING:
        rows.append(("expires", _when(a.expires)))
    writes = summary.get("writes") or []
    if len(writes) > 1:
        rows.append(("writes", f"<b>{len(writes)} separate operations</b>, each shown below"))
    else:
        rows += [(label, _e(summary[key])) for key, label in _LABELS.items() if key in summary]
    rows += _outcome_rows(a)
    if deliveries:
        rows.append(("notified", "<br>".join(f"{_e(k)}: <span class='delivery'>{_e(v)}</span>"
                                             for k, v in sorted(deliveries.items()))))
    details = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in rows)
    if len(writes) > 1:
        details += "".join(
            f"<dt>write {n}</dt><dd>" + "; ".join(f"{_e(k)}: {_e(v)}" for k, v in w.items() if k != "body") + "</dd>"
            for n, w in enumerate(writes, 1))
    text = _texts(a, summary, context, full=full)
    actions = _actions(a, session) if a.status == PENDING else ""
    link = "" if full else f" <a href='{session.base}approvals/{_e(a.id)}'>details</a>"
    return (f"<section class='card' id='approval-{_e(a.id)}'><h3>Approval {_e(a.id)} "
            f"<span class='status {_e(a.status)}'>{_e(a.status)}</span>{link}</h3>"
            f"<dl>{details}</dl>{text}{actions}</section>")


def _agents(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class='empty'>No agents in the policy.</p>"
    lines = []
    for r in rows:
        budget = "no limit" if r["writes_limit"] is None else f"{r['writes_used']} used, {r['writes_left']} left of {r['writes_limit']}"
        ops = "; ".join(f"{op}: {v['used']}/{v['limit']}" for op, v in r["operations"].items()) or "-"
        lines.append(f"<tr><td>{_e(r['agent'])}</td><td>{_e(r['mode'])}</td><td>{_e(budget)}</td><td>{_e(ops)}</td></tr>")
    return ("<table><thead><tr><th>agent</th><th>mode</th><th>writes in the window</th><th>per operation</th></tr>"
            f"</thead><tbody>{''.join(lines)}</tbody></table>")


def _paused(paused: dict[str, str], reasons: dict[str, str], session: Session) -> str:
    hidden = f"<input type='hidden' name='csrf' value='{_e(session.csrf)}'>"
    items = "".join(
        f"<li>{_e(repo)} ({_e(source)})"
        + (f": <span class='pause-reason'>{_e(reasons[repo])}</span>" if reasons.get(repo) else "")
        + (f" <form class='inline' method='post' action='{session.base}resume'>{hidden}<input type='hidden' "
           f"name='repo' value='{_e(repo)}'><button>Resume</button></form>" if source == "run time" else "")
        + "</li>"
        for repo, source in paused.items()
    )
    listing = f"<ul>{items}</ul>" if items else "<p class='empty'>None.</p>"
    return (listing + f"<form method='post' action='{session.base}pause'>{hidden}<label>Pause a repository "
            "<input name='repo' placeholder='owner/name' required></label> <label>Reason "
            "<input name='reason' placeholder='why'></label> <button>Pause</button></form>")


def _stuck(rows: list[dict[str, Any]]) -> str:
    """Approvals stuck in ``sending`` (:mod:`gitvow_proxy.stuck`): shown first, loudly; nothing
    when there are none."""
    if not rows:
        return ""
    items = "".join(f"<li><b>{_e(r['id'])}</b> {_e(r['agent'])} {_e(r['request'])}: {_e(r['stuck'])}</li>" for r in rows)
    return f"<section class='stuck' role='alert'><h2>Stuck approvals ({len(rows)})</h2><ul>{items}</ul></section>"


def _refusals(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class='empty'>None recently.</p>"
    lines = "".join(
        f"<tr><td><time>{_e(r['time'])}</time></td><td>{_e(r['agent'] or '-')}</td><td>{_e(r['verdict'])}</td>"
        f"<td>{_e(r['reason'] or '-')}</td><td>{_e(', '.join(r['operations'] or []))}</td><td>{_e(r['repo'] or '-')}</td>"
        f"<td>{_e(r['method'])} {_e(r['path'])}</td></tr>"
        for r in rows
    )
    return ("<table><thead><tr><th>time</th><th>agent</th><th>verdict</th><th>reason</th><th>operations</th>"
            f"<th>repository</th><th>request</th></tr></thead><tbody>{lines}</tbody></table>")


def colour_of(name: str) -> str:
    """A series' colour, the same whatever else the chart holds: allowed requests green; each
    refusal reason its own (fixed for the common ones, else from a hash of its name), never green."""
    if name == "allow":
        return ALLOW_COLOUR
    return _FIXED_COLOURS.get(name) or _PALETTE[zlib.crc32(name.encode()) % len(_PALETTE)]


def _tick(at: float, span: str) -> str:
    return time.strftime("%d %b" if span == "7d" else "%d %b %H:%M", time.gmtime(at))


def _chart(decisions: dict[str, Any], span: str) -> str:
    """Stacked bars, one per time bucket, one colour per verdict and reason; an SVG, no script."""
    series: dict[str, list[int]] = decisions["series"]
    colour = {name: colour_of(name) for name in series}
    if not series:
        return "<p class='empty'>No decisions in this span.</p>"
    buckets = len(next(iter(series.values())))
    totals = [sum(values[i] for values in series.values()) for i in range(buckets)]
    top = max(1, *totals)
    width, height, left, bottom = 720, 220, 40, 24
    bar = (width - left) / buckets
    shapes = []
    for i in range(buckets):
        y = float(height - bottom)
        for name, values in series.items():
            if values[i]:
                h = values[i] / top * (height - bottom - 10)
                y -= h
                shapes.append(f"<rect x='{left + i * bar + 1:.1f}' y='{y:.1f}' width='{bar - 2:.1f}' height='{h:.1f}' "
                              f"fill='{colour[name]}'><title>{_e(name)}: {values[i]}</title></rect>")
    start, step = decisions["start"], decisions["bucket_seconds"]
    ticks = "".join(
        f"<text x='{left + i * bar:.1f}' y='{height - 6}' font-size='11'>{_tick(start + i * step, span)}</text>"
        for i in range(0, buckets, max(1, buckets // 5))
    )
    axis = (f"<line x1='{left}' y1='{height - bottom}' x2='{width}' y2='{height - bottom}' stroke='#888'/>"
            f"<text x='0' y='16' font-size='11'>{top}</text><text x='0' y='{height - bottom}' font-size='11'>0</text>")
    legend = "".join(
        f"<li><svg width='12' height='12' aria-hidden='true'><rect width='12' height='12' "
        f"fill='{colour[name]}'/></svg> {_e(name)}: {sum(values)}</li>"
        for name, values in series.items()
    )
    return (f"<figure><svg role='img' aria-label='decisions over the last {_e(span)} by verdict and reason' "
            f"viewBox='0 0 {width} {height}' width='100%' id='decisions-chart'>{axis}{''.join(shapes)}{ticks}</svg>"
            f"<figcaption><p class='note'>UTC, {_when(start)} to {_when(start + buckets * step)}</p>"
            f"<ul class='legend'>{legend}</ul></figcaption></figure>")


def start_desk(policy: Callable[[], Policy], store: Store, *, wake: Callable[[], None] = lambda: None,
               routes: Routes | None = None) -> Desk | None:
    """The desk on ``[admin] listen``, or None when ``[admin]`` is absent or its secret is not set.
    ``routes`` are served without a session (``/metrics``)."""
    current = policy()
    admin = current.section(ProxyPolicy).admin
    if admin is None:
        return None
    secret = read_secret(admin.secret_env, admin.secret_file, source=current.source, key="admin")
    if not secret:
        log.warning("gitvow: the approval desk is off: [admin] has no readable secret")
        return None
    desk = Desk(policy, store, secret, admin.address, wake, routes, admin.hosts).start()
    log.info("gitvow: approval desk at http://%s:%d/", admin.address[0], desk.port)
    return desk


__all__ = ["Desk", "Session", "SignInThrottle", "colour_of", "start_desk"]
