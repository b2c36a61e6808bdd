"""``gitvow proxy``: mitmproxy embedded with its own master, serving the gitvow addons.

mitmproxy runs in this process (no shell-out), with gitvow's addons as its only policy: flows are
not dumped (request headers would show the injected token), upstream connections are opened
lazily (a refused request never opens one), and SIGTERM/SIGINT shut it down cleanly.
"""

from __future__ import annotations

import asyncio
import gc
import io
import logging
import re
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitvow.errors import GitvowError
from gitvow.policy.load import load_policy
from gitvow_proxy.addons.graceful_stop import GracefulStop
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared

if TYPE_CHECKING:
    from mitmproxy.master import Master

    from gitvow_proxy.addons.graceful_stop import GracefulStop
    from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    """What the command line may override in ``[proxy]``, plus raw mitmproxy ``--set`` options."""

    policy: Path
    listen_host: str | None = None
    listen_port: int | None = None
    confdir: str | None = None
    state: str | None = None
    record: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    #: Start although a credential or agent secret the policy names is not set (it warns once).
    allow_unset_secrets: bool = False


def check(options: ProxyOptions) -> None:
    """Validate the policy and everything it names before anything listens (raises GitvowError):
    a credential or agent secret named by the policy and not set refuses the start, in one
    line, unless ``allow_unset_secrets``. Quietly: the proxy's own load warns once, after."""
    from gitvow_proxy.identity import unset_secrets
    from gitvow_proxy.runtime import build_runtime
    from gitvow_proxy.store import MemoryStore

    quiet = logging.getLogger("gitvow_proxy")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        runtime = build_runtime(options.policy, MemoryStore(), confdir=options.confdir)
    finally:
        quiet.setLevel(level)
    missing = unset_secrets(runtime.policy)
    if missing and not options.allow_unset_secrets:
        named = "; ".join(f"{key}: environment variable {env} is not set" for key, env in missing)
        raise GitvowError(f"{runtime.policy.source or options.policy}: {named} "
                          "(set it, or start without it: --allow-unset-secrets)")


class PortHint(logging.Filter):
    """mitmproxy's advice for a port in use names its ``--mode`` option, which ``gitvow proxy``
    does not take: say ``--listen-port`` instead (the same port it suggests)."""

    _MODE = re.compile(r"\nTry specifying a different port by using `--mode [^`]*?@(\d+)`\.")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        found = self._MODE.search(message)
        if found is not None:
            record.msg = self._MODE.sub(f"\nTry another port: gitvow proxy --listen-port {found.group(1)} "
                                        "(or [proxy] listen_port).", message)
            record.args = None
        return True


def lean_addons() -> list[object]:
    """The mitmproxy addons a policy proxy needs, and no more.

    mitmproxy dispatches every hook of every request (request headers, request, response
    headers, response, and an ``update`` after each) to every addon it holds, each dispatch a
    coroutine, a context manager and a getattr; mitmdump's thirty-odd default addons cost
    more CPU per request than gitvow's whole pipeline. Kept: option and command handling
    (core), refusing non-local clients by default (block), h2c upgrades refused
    (disable_h2c), the listener (proxyserver), ``--set scripts=`` (script), the protocol
    layers (next_layer), TLS (tlsconfig), an upstream proxy's credentials (upstream_auth) and
    start-up error reporting (errorcheck). Left out: replay, flow saving and export,
    traffic rewriting (map/modify/anticache/anticomp/sticky*), mitmproxy's own proxy
    authentication (gitvow identifies agents), onboarding, the browser and DNS helpers; their
    options are therefore unknown to ``gitvow proxy --set``. They are imported through
    mitmproxy's public ``mitmproxy.addons`` package, which loads its whole catalogue once at
    start; the addons left out are never added to the master, so they cost nothing per request."""
    from mitmproxy.addons import (
        block,
        core,
        disable_h2c,
        errorcheck,
        next_layer,
        proxyserver,
        script,
        tlsconfig,
        upstream_auth,
    )

    return [
        core.Core(),
        block.Block(),
        disable_h2c.DisableH2C(),
        proxyserver.Proxyserver(),  # type: ignore[no-untyped-call]
        script.ScriptLoader(),  # type: ignore[no-untyped-call]
        next_layer.NextLayer(),
        tlsconfig.TlsConfig(),
        upstream_auth.UpstreamAuth(),
        errorcheck.ErrorCheck(),
    ]


async def serve(options: ProxyOptions) -> int:
    from mitmproxy import options as mitm_options
    from mitmproxy.master import Master

    from gitvow_proxy.addons import AddonChain, proxy_addons
    from gitvow_proxy.addons.graceful_stop import GracefulStop
    from gitvow_proxy.agentenv import proxy_ca
    from gitvow_proxy.shared import Shared

    # mitmproxy prints its log to stdout; a proxy's log must reach a file as it happens.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    # As mitmdump sets logging up: everything reaches mitmproxy's handler, which filters by
    # termlog_verbosity (info by default), so "listening at" and "policy loaded" are shown.
    logging.getLogger().setLevel(logging.DEBUG)
    for noisy in ("tornado", "asyncio", "hpack", "quic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("mitmproxy.addons.proxyserver").addFilter(PortHint())

    settings = load_policy(options.policy, absent="skip").section(ProxyPolicy).proxy
    confdir = Path(options.confdir or settings.confdir).expanduser()
    proxy_ca(confdir)  # before listening: an agent that can connect can also find the CA
    opts = mitm_options.Options(
        listen_host=options.listen_host or settings.listen_host,
        listen_port=settings.listen_port if options.listen_port is None else options.listen_port,
        confdir=str(confdir),
    )
    master = Master(opts, with_termlog=True)
    if __debug__:  # not under python -O (gitvow proxy runs itself so: see gitvow_proxy.optimised)
        log.info("gitvow: python runs without -O: mitmproxy type-checks every HTTP message, which is slower")
    shared = Shared()
    addons = proxy_addons(shared)
    master.addons.add(*lean_addons(), AddonChain(addons))  # type: ignore[no-untyped-call]
    updates: dict[str, object] = {
        "connection_strategy": "lazy",
        "gitvow_policy": str(options.policy),
    }
    if options.state:
        updates["gitvow_state"] = options.state
    if options.record:
        updates["gitvow_record"] = options.record
    if settings.upstream_ca:
        updates["ssl_verify_upstream_trusted_ca"] = str(Path(settings.upstream_ca).expanduser())
    opts.update(**updates)  # type: ignore[no-untyped-call]
    for key, value in options.extra.items():
        opts.set(f"{key}={value}")
    # Everything loaded so far (plugins, route tables, the policy) lives as long as the proxy:
    # keep it out of the garbage collector's scans, which otherwise grow with it per request.
    gc.collect()
    gc.freeze()
    loop = asyncio.get_running_loop()
    stopper = next(addon for addon in addons if isinstance(addon, GracefulStop))
    grace = settings.shutdown_grace
    loop.add_signal_handler(signal.SIGTERM, _stop_gracefully, master, stopper, grace)
    loop.add_signal_handler(signal.SIGINT, master.shutdown)
    loop.add_signal_handler(signal.SIGHUP, _reopen_audit, shared)  # logrotate's signal: reopen, never exit
    await master.run()
    return 0


def _stop_gracefully(master: Master, stopper: GracefulStop, grace: float) -> None:
    """SIGTERM: drain (answers first), then stop; a second SIGTERM stops at once."""
    if stopper.draining:
        master.shutdown()  # type: ignore[no-untyped-call]
        return

    async def drain_then_stop() -> None:
        try:
            await stopper.drain(grace)
        finally:
            master.shutdown()  # type: ignore[no-untyped-call]

    _draining.append(asyncio.get_running_loop().create_task(drain_then_stop()))


_draining: list[asyncio.Task[None]] = []


def _reopen_audit(shared: Shared) -> None:
    if shared.audit is not None:
        shared.audit.reopen()
        log.info("gitvow: SIGHUP: the audit log %s is reopened", shared.audit.path)


def main(options: ProxyOptions) -> int:
    """Run until SIGTERM/SIGINT; a policy that does not load is one line on stderr and exit 2."""
    try:
        check(options)
    except GitvowError as exc:
        print(f"gitvow proxy: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(options))
    except GitvowError as exc:
        print(f"gitvow proxy: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from mitmproxy.exceptions import OptionsError

        if isinstance(exc, OptionsError):
            print(f"gitvow proxy: {exc}", file=sys.stderr)
            return 2
        raise
