"""The needs of one request's decision, answered off mitmproxy's event loop.

The engine is sans-IO (:mod:`gitvow.needs`): it yields what a gate needs and is sent the
answer. :func:`drive` runs one decision on the event loop and awaits each answer from
:class:`Answers`, which goes to the state store on the store's one worker thread (or on the
loop, for a store that admits without blocking it) and to the forge in a thread of its own,
so no other flow waits on either.

What outlives a decision is explicit and small: the run-time flags read last
(:class:`LastFlags`, one per policy load), which answer a budgeted write's
:class:`~gitvow_proxy.needs.ReadFlags` unconfirmed; the write's admission then confirms them
in the round trip that takes its budget (:class:`~gitvow_proxy.needs.Admit`), so such a
write costs the store one round trip. A write is therefore never forwarded on flags the store
no longer holds. A write refused or staged by a later stage before any admission was decided
on the flags read last (it is refused either way; a staged one is judged again when it is
sent): its decision reads them afresh behind it, for the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from concurrent.futures import Executor
from typing import Any

from gitvow.needs import Lookup
from gitvow.pipeline import Decision, Engine
from gitvow.request import Request, Resolution, Target
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.needs import Admit, ReadFlags, SeenFlags
from gitvow_proxy.resolver import resolve_targets
from gitvow_proxy.store import Admission, Flags, StoreBusy


class LastFlags:
    """The run-time flags as last read from the store under one policy load."""

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.flags: Flags | None = None


class Answers:
    """The answers of one decision: the flags it was given (read once per decision), and
    whether they were read for it or are the last read, still to be confirmed."""

    def __init__(self, engine: Engine, gates: ProxyGates, request: Request, worker: Executor, last: LastFlags,
                 upstream: Callable[[], Any]) -> None:
        self.engine = engine
        self.gates = gates
        self.request = request
        self.worker = worker
        self.last = last
        self.upstream = upstream
        self.flags: Flags | None = None
        self.confirmed = True

    async def answer(self, need: object) -> object:
        if isinstance(need, ReadFlags):
            return await self._flags(need)
        if isinstance(need, Admit):
            return await self._admit(need)
        if isinstance(need, Lookup):
            return await self._lookup(need)
        return self.gates.answer(need)

    async def _flags(self, need: ReadFlags) -> SeenFlags:
        if self.flags is not None and (self.confirmed or need.confirmable):
            return SeenFlags(self.flags, self.confirmed)
        if need.confirmable and self.last.flags is not None:
            self.flags, self.confirmed = self.last.flags, False
            return SeenFlags(self.flags, confirmed=False)
        store = self.gates.store
        found = await asyncio.get_running_loop().run_in_executor(self.worker, store.all_flags)
        self.flags = self.last.flags = found
        self.confirmed = True
        return SeenFlags(found)

    async def _admit(self, need: Admit) -> Admission:
        store = self.gates.store
        loop = asyncio.get_running_loop()
        if self.flags is None or self.confirmed:
            wait = await loop.run_in_executor(self.worker, lambda: store.take(need.keys, need.now, need.window,
                                                                              amounts=need.amounts))
            return Admission(wait)
        seen = self.flags
        admission: Admission | None = None
        if store.admits_on_loop:
            try:
                admission = await store.admit_async(seen, need.keys, need.now, need.window, amounts=need.amounts)
            except StoreBusy:  # it would have to wait for another writer: made on the worker, where waiting is allowed
                admission = None
        if admission is None:
            admission = await loop.run_in_executor(
                self.worker, lambda: store.admit(seen, need.keys, need.now, need.window, amounts=need.amounts))
        self.confirmed = True
        if admission.flags is not None:  # nothing taken: the gate judges the write on the store's flags
            self.flags = self.last.flags = admission.flags
        return admission

    async def _lookup(self, need: Lookup) -> dict[Target, Resolution]:
        gates = self.gates
        found, missing = gates.resolutions.lookup(need.scope, need.targets)
        if not missing:
            return found
        adapter = self.engine.hosts.lookup(self.request.host, self.request.port)
        if adapter is not None:
            token = gates.credentials.get(adapter.name)
            await asyncio.to_thread(resolve_targets, need.scope, missing, gates.resolutions, adapter, self.request,
                                    token, self.upstream())
        found, _ = gates.resolutions.lookup(need.scope, need.targets)
        return found

    def finish(self) -> None:
        """After the decision: flags it used unconfirmed (it was refused or staged before any
        admission) are read afresh behind it, on the store's worker, for the next decision."""
        if self.flags is None or self.confirmed:
            return
        store, last = self.gates.store, self.last

        def refresh() -> None:
            try:
                last.flags = store.all_flags()
            except Exception:  # the next write reads them itself, and judges the failure
                last.flags = None

        self.worker.submit(refresh)


async def drive(judging: Generator[object, Any, Decision], answers: Answers) -> Decision:
    """:func:`gitvow.pipeline.drive` on the event loop: each need's answer is awaited."""
    reply: object = None
    failure: Exception | None = None
    while True:
        try:
            need = judging.send(reply) if failure is None else judging.throw(failure)
        except StopIteration as done:
            answers.finish()
            decision: Decision = done.value
            return decision
        try:
            reply, failure = await answers.answer(need), None
        except Exception as exc:
            reply, failure = None, exc


__all__ = ["Answers", "LastFlags", "drive"]
