"""The approval desk: a small server-rendered web page on the proxy's admin listener.

``[admin] listen`` (loopback by default) and an operator secret from ``secret_env`` or
``secret_file``, never an agent's: without a secret the desk is off. It lists pending
approvals with a readable rendering of what each will do and approves or rejects them; it
pauses and resumes repositories; it shows each agent's budget, recent refusals and a chart of
decisions over time by verdict and reason (an inline SVG). No JavaScript at all: plain forms.

Safety: the secret is compared in constant time and exchanged for a random session cookie
(``HttpOnly``, ``SameSite=Strict``, 12 hours); every form carries the session's CSRF token and
a POST whose ``Origin`` is not this desk is refused. Decisions are store operations, exactly
as ``gitvow approvals approve`` makes them; the proxy's sender is woken to send at once.
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from gitvow.errors import GitvowError
from gitvow.policy.load import Policy
from gitvow_proxy.admin import Routes
from gitvow_proxy.approvals import PENDING, Approval
from gitvow_proxy.audit import AuditLog, audit_approval
from gitvow_proxy.identity import read_secret
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.status import SPANS, gather
from gitvow_proxy.store import PAUSED, Store

log = logging.getLogger("gitvow_proxy")

COOKIE = "gitvow_desk"
SESSION_SECONDS = 12 * 3600
FAILED_SIGN_IN_DELAY = 0.5
ALLOW_COLOUR = "#2e7d32"
_PALETTE = ("#c62828", "#ef6c00", "#6a1b9a", "#1565c0", "#00838f", "#ad1457", "#5d4037", "#455a64",
            "#9e9d24")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


class Desk:
    """The listener thread and its sessions."""

    def __init__(self, policy: Callable[[], Policy], store: Store, secret: str, address: tuple[str, int],
                 wake: Callable[[], None] = lambda: None, routes: Routes | None = None) -> None:
        self.policy = policy
        self.routes = dict(routes or {})
        self.store = store
        self._secret = secret
        self.wake = wake
        self._sessions: dict[str, tuple[str, str, float]] = {}  # token → (operator, csrf, expiry)
        self._lock = threading.Lock()
        desk = self

        class Handler(_Handler):
            pass

        Handler.desk = desk
        try:
            self.server = ThreadingHTTPServer(address, Handler)
        except OSError as exc:
            raise GitvowError(f"[admin] listen {address[0]}:{address[1]}: {exc.strerror or exc}") from None
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="gitvow-desk", daemon=True)

    def start(self) -> Desk:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- sessions -------------------------------------------------------------------------------

    def login(self, name: str, secret: str) -> str | None:
        if not hmac.compare_digest(secret.encode(), self._secret.encode()):
            return None
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = time.time()
            self._sessions = {t: s for t, s in self._sessions.items() if s[2] > now}
            self._sessions[token] = (name or "operator", secrets.token_urlsafe(32), now + SESSION_SECONDS)
        return token

    def session(self, token: str | None) -> tuple[str, str] | None:
        """``(operator, csrf token)`` of a live session."""
        if not token:
            return None
        with self._lock:
            found = self._sessions.get(token)
        if found is None or found[2] <= time.time():
            return None
        return found[0], found[1]

    def logout(self, token: str | None) -> None:
        with self._lock:
            self._sessions.pop(token or "", None)

    def audit(self) -> AuditLog:
        return AuditLog(self.policy().section(ProxyPolicy).audit.path)


class _Handler(BaseHTTPRequestHandler):
    desk: Desk
    server_version = "gitvow-desk"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("gitvow desk: " + format, *args)

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
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
        self.send_header("Referrer-Policy", "same-origin")  # "no-referrer" makes form posts say Origin: null
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, where: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > 64 * 1024:
            return {}
        raw = self.rfile.read(length).decode("utf-8", "replace")
        return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}

    def _same_origin(self) -> bool:
        origin = self.headers.get("Origin")
        if origin is None or origin == "null":
            return origin is None
        return urlsplit(origin).netloc == self.headers.get("Host", "")

    # -- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
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
            self._send(200, _page("Sign in", _login_form(query.get("failed") == "1")))
            return
        session = self.desk.session(self._token())
        if session is None:
            self._redirect("/login")
            return
        if url.path == "/":
            self._send(200, self._home(session, query))
        elif url.path.startswith("/approvals/"):
            approval = self.desk.store.approval(url.path.rsplit("/", 1)[1])
            if approval is None:
                self._send(404, _page("Not found", "<p>No such approval.</p><p><a href='/'>Back</a></p>"))
            else:
                self._send(200, _page(f"Approval {approval.id}", _approval_card(approval, session[1], full=True)
                                      + "<p><a href='/'>Back to the desk</a></p>"))
        else:
            self._send(404, _page("Not found", "<p><a href='/'>Back</a></p>"))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        form = self._form()
        if not self._same_origin():
            self._send(403, _page("Refused", "<p>Cross-site request refused.</p>"))
            return
        if url.path == "/login":
            token = self.desk.login(form.get("name", "").strip()[:64], form.get("secret", ""))
            if token is None:
                log.warning("gitvow desk: a sign-in with a wrong secret")
                time.sleep(FAILED_SIGN_IN_DELAY)  # each guess costs the guesser, not the proxy (its own thread)
                self._redirect("/login?failed=1")
                return
            cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_SECONDS}"
            self._redirect("/", {"Set-Cookie": cookie})
            return
        token = self._token()
        session = self.desk.session(token)
        if session is None:
            self._redirect("/login")
            return
        operator, csrf = session
        if not hmac.compare_digest(form.get("csrf", "").encode(), csrf.encode()):
            self._send(403, _page("Refused", "<p>The form expired or came from elsewhere. <a href='/'>Reload the desk</a>.</p>"))
            return
        if url.path == "/logout":
            self.desk.logout(token)
            self._redirect("/login", {"Set-Cookie": f"{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"})
            return
        try:
            done = self._act(url.path, form, f"{operator} (desk)")
        except GitvowError as exc:
            done = f"Not done: {exc}"
        self._redirect("/?done=" + quote(done))

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
            desk.store.set_flag(PAUSED, repo, path == "/pause")
            audit = desk.audit()
            try:
                audit.write(agent=None, host="-", method="-", path="-", repo=repo, stage="run_state",
                            verdict="paused" if path == "/pause" else "resumed", by=by)
            finally:
                audit.close()
            return f"{'Paused' if path == '/pause' else 'Resumed'} {repo}."
        return "Not done: unknown action"

    def _home(self, session: tuple[str, str], query: dict[str, str]) -> str:
        operator, csrf = session
        span = SPANS.get(query.get("span", ""), SPANS["24h"])
        data = gather(self.desk.policy(), self.desk.store, span=span)
        pending = [a for a in self.desk.store.approvals([PENDING]) if a.expires > time.time()]
        recent = [a for a in self.desk.store.approvals(limit=20) if a.status != PENDING][:10]
        done = query.get("done")
        parts = [
            f"<p class='who'>Signed in as {_e(operator)}. <form class='inline' method='post' action='/logout'>"
            f"<input type='hidden' name='csrf' value='{_e(csrf)}'><button>Sign out</button></form></p>",
            f"<p class='flash' role='status'>{_e(done)}</p>" if done else "",
            f"<h2>Pending approvals ({len(pending)})</h2>",
            "".join(_approval_card(a, csrf) for a in pending) or "<p class='empty'>Nothing is waiting.</p>",
            "<h2>Decisions over time</h2>",
            "<p>" + " · ".join(f"<a href='/?span={s}'>{s}</a>" if s != span.name else f"<b>{s}</b>" for s in SPANS)
            + "</p>",
            _chart(data["decisions"], span.name),
            "<h2>Agents</h2>", _agents(data["agents"]),
            "<h2>Paused repositories</h2>", _paused(data["paused"], csrf),
            "<h2>Recent refusals</h2>", _refusals(data["recent_refusals"]),
            "<h2>Recently decided</h2>",
            "".join(_approval_card(a, csrf) for a in recent) or "<p class='empty'>None yet.</p>",
        ]
        return _page("gitvow approval desk", "".join(parts))


# -- rendering ------------------------------------------------------------------------------------

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#1b1b1b}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
.card{border:1px solid #ccc;border-radius:6px;padding:.75rem 1rem;margin:.75rem 0}
.card h3{margin:.1rem 0 .5rem;font-size:1rem}
dl{display:grid;grid-template-columns:9rem 1fr;gap:.15rem .75rem;margin:.25rem 0}dt{color:#555}dd{margin:0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;border-radius:4px;max-height:16rem;overflow:auto}
.status{font-weight:600;text-transform:uppercase;font-size:.8rem;padding:.1rem .4rem;border-radius:3px;background:#eee}
.status.pending{background:#fff3cd}.status.sent{background:#d4edda}.status.rejected,.status.failed{background:#f8d7da}
form.inline{display:inline}.actions{margin-top:.5rem;display:flex;gap:1rem;flex-wrap:wrap;align-items:center}
button{font:inherit;padding:.3rem .9rem;cursor:pointer}button.approve{background:#2e7d32;color:#fff;border:0;border-radius:4px}
button.reject{background:#c62828;color:#fff;border:0;border-radius:4px}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eee}
.flash{background:#e8f0fe;padding:.5rem .75rem;border-radius:4px}.empty{color:#666}.who{float:right;margin:0}
"""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'><style>{_STYLE}</style></head>"
            f"<body><h1>{_e(title)}</h1>{body}</body></html>")


def _login_form(failed: bool) -> str:
    error = "<p class='flash' role='alert'>That secret is not the operator secret.</p>" if failed else ""
    return (f"{error}<form method='post' action='/login'>"
            "<p><label>Your name <input name='name' autocomplete='username' required></label></p>"
            "<p><label>Operator secret <input name='secret' type='password' autocomplete='current-password' required>"
            "</label></p><p><button>Sign in</button></p></form>")


def _approval_card(a: Approval, csrf: str, *, full: bool = False) -> str:
    summary = a.summary()
    rows = [
        ("agent", a.agent), ("operation", ", ".join(a.operations)), ("repository", a.repo or "-"),
        ("request", f"{a.target} on {a.url.split('://', 1)[-1].partition('/')[0]}"),
        ("staged", _when(a.created)),
    ]
    if a.status == PENDING:
        rows.append(("expires", _when(a.expires)))
    labels = {"title": "title", "head": "head branch", "base": "base branch", "merge method": "merge method",
              "commit title": "commit title", "draft": "draft"}
    rows += [(label, summary[key]) for key, label in labels.items() if key in summary]
    if a.decided_by:
        rows.append(("decided", f"{_when(a.decided_at)} by {a.decided_by}" + (f": {a.reason}" if a.reason else "")))
    if a.sent_at:
        rows.append(("answered", f"{_when(a.sent_at)}: {a.response_status or 'no answer'}"))
    details = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    body = summary.get("body")
    text = f"<p>Body:</p><pre>{_e(body)}</pre>" if isinstance(body, str) and body else ""
    if full:
        text += f"<p>Request body as sent:</p><pre>{_e(a.body.decode('utf-8', 'replace'))}</pre>"
        if a.response_body:
            text += f"<p>Upstream answer:</p><pre>{_e(a.response_body.decode('utf-8', 'replace'))}</pre>"
    actions = ""
    if a.status == PENDING:
        hidden = f"<input type='hidden' name='csrf' value='{_e(csrf)}'>"
        actions = (
            "<div class='actions'>"
            f"<form class='inline' method='post' action='/approvals/{_e(a.id)}/approve'>{hidden}"
            f"<button class='approve' name='approve' value='{_e(a.id)}'>Approve {_e(a.id)}</button></form>"
            f"<form class='inline' method='post' action='/approvals/{_e(a.id)}/reject'>{hidden}"
            f"<label>Reason <input name='reason' required placeholder='why not'></label> "
            f"<button class='reject'>Reject {_e(a.id)}</button></form></div>"
        )
    link = "" if full else f" <a href='/approvals/{_e(a.id)}'>details</a>"
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


def _paused(paused: dict[str, str], csrf: str) -> str:
    hidden = f"<input type='hidden' name='csrf' value='{_e(csrf)}'>"
    items = "".join(
        f"<li>{_e(repo)} ({_e(source)})"
        + (f" <form class='inline' method='post' action='/resume'>{hidden}<input type='hidden' name='repo' "
           f"value='{_e(repo)}'><button>Resume</button></form>" if source == "run time" else "")
        + "</li>"
        for repo, source in paused.items()
    )
    listing = f"<ul>{items}</ul>" if items else "<p class='empty'>None.</p>"
    return (listing + f"<form method='post' action='/pause'>{hidden}<label>Pause a repository "
            "<input name='repo' placeholder='owner/name' required></label> <button>Pause</button></form>")


def _refusals(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class='empty'>None recently.</p>"
    lines = "".join(
        f"<tr><td>{_e(r['time'])}</td><td>{_e(r['agent'] or '-')}</td><td>{_e(r['verdict'])}</td>"
        f"<td>{_e(r['reason'] or '-')}</td><td>{_e(', '.join(r['operations'] or []))}</td><td>{_e(r['repo'] or '-')}</td>"
        f"<td>{_e(r['method'])} {_e(r['path'])}</td></tr>"
        for r in rows
    )
    return ("<table><thead><tr><th>time</th><th>agent</th><th>verdict</th><th>reason</th><th>operations</th>"
            f"<th>repository</th><th>request</th></tr></thead><tbody>{lines}</tbody></table>")


def _colours(names: list[str]) -> dict[str, str]:
    """Allowed requests green; each refusal series its own colour, never green."""
    refusals = [n for n in names if n != "allow"]
    colours = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(refusals)}
    colours["allow"] = ALLOW_COLOUR
    return colours


def _chart(decisions: dict[str, Any], span: str) -> str:
    """Stacked bars, one per time bucket, one colour per verdict and reason; an SVG, no script."""
    series: dict[str, list[int]] = decisions["series"]
    colour = _colours(list(series))
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
    fmt = "%H:%M" if span != "7d" else "%m-%d"
    ticks = "".join(
        f"<text x='{left + i * bar:.1f}' y='{height - 6}' font-size='11'>{time.strftime(fmt, time.gmtime(start + i * step))}</text>"
        for i in range(0, buckets, max(1, buckets // 6))
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
            f"<figcaption><ul class='legend'>{legend}</ul></figcaption></figure>")


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
    desk = Desk(policy, store, secret, admin.address, wake, routes).start()
    log.info("gitvow: approval desk at http://%s:%d/", admin.address[0], desk.port)
    return desk


__all__ = ["Desk", "start_desk"]
