"""The policy reload addon: loads ``gitvow_policy`` and keeps it current.

Options ``gitvow_policy`` (the policy file, required) and ``gitvow_state`` (overrides
``[proxy] state``). The first load opens the state store and the audit log; afterwards the
file is polled every ``[proxy] reload_interval`` and a change is loaded whole into a new
:class:`~gitvow_proxy.runtime.Runtime`, or not at all: a bad edit keeps the last good policy.
Without a valid policy the other addons refuse every request (never fail open).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mitmproxy import ctx, exceptions

from gitvow.errors import GitvowError
from gitvow_proxy.audit import AuditLog
from gitvow_proxy.runtime import Runtime, build_runtime, open_state
from gitvow_proxy.settings import OtlpExportSettings, ProxyPolicy
from gitvow_proxy.shared import Shared
from gitvow_proxy.store import is_shared

if TYPE_CHECKING:
    from gitvow_proxy.telemetry.otlp import OtlpExport

log = logging.getLogger("gitvow_proxy")


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _exporter(settings: OtlpExportSettings | None) -> OtlpExport | None:
    """The OTLP exporter ``[audit.otlp]`` names (opentelemetry is imported only then)."""
    if settings is None:
        return None
    from gitvow_proxy.telemetry.otlp import from_settings

    return from_settings(settings.endpoint, settings.headers_env, settings.queue)



def _where(state: str) -> str:
    """The state store as the start line names it: a server's URL as written (without any
    password), a file's path with ``~`` expanded."""
    if state == ":memory:":
        return state
    if is_shared(state):
        from gitvow_proxy.store.redis_store import redacted

        return redacted(state)
    return str(Path(state).expanduser())

class PolicyReload:
    """Loads the policy into :attr:`Shared.runtime`; owns the store's and audit log's lifetimes."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self._stamp: tuple[int, int] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._otlp: OtlpExportSettings | None = None

    def load(self, loader: Any) -> None:
        loader.add_option("gitvow_policy", str, "", "gitvow policy file (TOML or JSON).")
        loader.add_option("gitvow_state", str, "", "gitvow state store: a SQLite path, :memory: or redis://HOST:PORT/DB "
                          "(default: [proxy] state).")

    def configure(self, updated: set[str]) -> None:
        if "gitvow_policy" not in updated and "gitvow_state" not in updated:
            return
        if not ctx.options.gitvow_policy:
            log.warning("gitvow: no policy (set gitvow_policy); every request is refused")
            return
        try:
            self.reload(initial=True)
        except GitvowError as exc:
            raise exceptions.OptionsError(f"gitvow: {exc}") from None  # type: ignore[no-untyped-call]

    def running(self) -> None:
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def done(self) -> None:
        shared = self.shared
        if self._watcher is not None:
            self._watcher.cancel()
        if shared.audit is not None:
            shared.audit.close()
        if shared.store is not None:
            shared.store.close()

    def reload(self, *, initial: bool = False) -> None:
        """Load the policy file; raises GitvowError and leaves everything as it was."""
        self._install(*self._prepare(initial=initial), initial=initial)

    def _prepare(self, *, initial: bool = False) -> tuple[Path, Runtime, tuple[int, int] | None]:
        """The policy file loaded into a new runtime (nothing installed yet). A reload runs
        this in a worker thread: it reads the store (the canaries it issued) and loads plugins,
        neither of which may hold up the event loop."""
        shared = self.shared
        path = Path(ctx.options.gitvow_policy)
        stamp = _file_stamp(path)
        if initial and shared.store is not None:
            shared.store.close()
            shared.store = None
        if shared.store is None:
            from gitvow.policy.load import load_policy

            shared.store = open_state(load_policy(path, absent="skip"), ctx.options.gitvow_state or None)
        runtime = build_runtime(path, shared.store, previous=None if initial else shared.runtime,
                                confdir=ctx.options.confdir)
        return path, runtime, stamp

    def _install(self, path: Path, runtime: Runtime, stamp: tuple[int, int] | None, *, initial: bool) -> None:
        """Put a loaded runtime in force (on the event loop: the audit log is swapped here)."""
        shared = self.shared
        audit_settings = runtime.policy.section(ProxyPolicy).audit
        audit_path = audit_settings.path
        if shared.audit is None or (shared.audit.path, self._otlp) != (audit_path, audit_settings.otlp):
            old, shared.audit = shared.audit, AuditLog(audit_path, otlp=_exporter(audit_settings.otlp))
            self._otlp = audit_settings.otlp
            if old is not None:
                old.close()
        shared.runtime, self._stamp = runtime, stamp
        hosts = ", ".join(f"{h}→{a}" for h, a in runtime.engine.hosts.items()) or "none"
        log.info("gitvow: policy %s loaded (hosts: %s)", path, hosts)
        if initial:
            state = ctx.options.gitvow_state or runtime.policy.section(ProxyPolicy).proxy.state
            where = _where(state)
            audit = audit_path if audit_path == "-" else str(Path(audit_path).expanduser())
            log.info("gitvow: state store %s; audit log %s", where, audit)

    async def _watch(self) -> None:
        while True:
            runtime = self.shared.runtime
            await asyncio.sleep(runtime.policy.section(ProxyPolicy).proxy.reload_interval if runtime else 1.0)
            stamp = _file_stamp(Path(ctx.options.gitvow_policy))
            if stamp is None or stamp == self._stamp:
                continue
            try:
                self._install(*await asyncio.to_thread(self._prepare), initial=False)
            except GitvowError as exc:
                self._stamp = stamp
                log.warning("gitvow: kept the last good policy; %s", exc)
            except Exception as exc:  # never let the watcher die
                self._stamp = stamp
                log.warning("gitvow: kept the last good policy; reload failed: %s: %s", type(exc).__name__, exc)


__all__ = ["PolicyReload"]
