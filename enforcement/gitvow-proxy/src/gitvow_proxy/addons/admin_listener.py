"""The admin addon: the listener on ``[admin] listen``, apart from the agents' port.

With an operator secret it serves the approval desk (:mod:`gitvow_proxy.desk`) and
``/metrics``; without one, ``/metrics`` alone (:mod:`gitvow_proxy.admin`). Started once the
proxy runs, with the policy loaded at start-up; the desk reads the policy in force on every
page.
"""

from __future__ import annotations

import logging
from typing import Any

from gitvow.errors import GitvowError
from gitvow.policy.load import Policy
from gitvow_proxy.admin import AdminServer
from gitvow_proxy.metrics import CONTENT_TYPE
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")


class AdminListener:
    """Starts the desk (or the bare ``/metrics`` server) when the proxy runs; stops it at the end."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.desk: Any = None  # gitvow_proxy.desk.Desk, when [admin] has a secret
        self.server: AdminServer | None = None

    def _policy(self) -> Policy:
        runtime = self.shared.runtime
        if runtime is None:
            raise RuntimeError("internal error: runtime unset")
        return runtime.policy

    def running(self) -> None:
        shared = self.shared
        runtime = shared.runtime
        if runtime is None or shared.store is None or self.desk is not None or self.server is not None:
            return
        from gitvow_proxy.desk import start_desk

        metrics = shared.metrics
        routes = {"/metrics": lambda: (CONTENT_TYPE, metrics.render())}
        try:
            self.desk = start_desk(self._policy, shared.store, wake=lambda: shared.wake_sender(), routes=routes)
        except GitvowError as exc:
            log.error("gitvow: the approval desk is off: %s", exc)
        admin = runtime.policy.section(ProxyPolicy).admin
        if self.desk is None and admin is not None:  # no operator secret: /metrics alone
            try:
                self.server = AdminServer(admin.address, routes, admin.hosts).start()
            except OSError as exc:
                log.error("gitvow: cannot listen at [admin] listen = %s: %s", admin.listen, exc)

    def done(self) -> None:
        if self.desk is not None:
            self.desk.stop()
        if self.server is not None:
            self.server.stop()


__all__ = ["AdminListener"]
