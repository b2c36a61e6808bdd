"""The scrub and record addon: what leaves the proxy carries none of its secrets.

Scrub: the credential the enforcement addon injected (and every forge token of the policy)
is replaced in the response's headers and body before the agent sees it; a body mitmproxy
cannot decode is refused (502) rather than passed unchecked.

Record (option ``gitvow_record``): each decided exchange is written, without credentials,
canaries or cookies, to a mitmproxy flow file with what its audit line says
(:mod:`gitvow_proxy.record`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mitmproxy import ctx, exceptions, http

from gitvow.errors import GitvowError
from gitvow.pipeline import INTERNAL_ERROR
from gitvow_proxy.flow_metadata import AUDIT_KEY, SECRETS_KEY, Audited
from gitvow_proxy.record import REDACTED, Recorder, redactor_of, sanitized
from gitvow_proxy.refusals import plain_refusal
from gitvow_proxy.shared import Shared

log = logging.getLogger("gitvow_proxy")


def scrub(flow: http.HTTPFlow) -> None:
    """Replace the injected secrets in the response (headers and decoded body)."""
    secrets = flow.metadata.get(SECRETS_KEY)
    if not secrets or flow.response is None:
        return
    response = flow.response
    watch = _watched(secrets)
    fields = response.headers.fields
    # One look over every header at once (a secret never holds a line break, so a match across two
    # fields is only a false alarm: the per-value pass below then finds nothing to replace).
    joined = b"\n".join([part for field in fields for part in field])
    if _holds(joined, watch):
        needles = [s for s in secrets if s]
        response.headers.fields = tuple(
            (name, REDACTED if _holds(value, needles) else value) for name, value in fields
        )
    try:
        # response.content decodes by the content-encoding header; with none it is the raw body
        # (a cheaper test than mitmproxy's case-insensitive header lookup).
        content = response.content if joined.lower().find(b"content-encoding") >= 0 else response.raw_content
    except ValueError:  # an encoding mitmproxy cannot decode: refuse to pass what we cannot check
        flow.response = plain_refusal(502, "gitvow could not check the upstream response", INTERNAL_ERROR)
        return
    if content and _holds(content, watch):
        for n in secrets:
            if n:
                content = content.replace(n, REDACTED)
        response.content = content
        log.warning("gitvow: redacted an injected credential from a response of %s", flow.request.host)


#: The secrets to look for, by the flow's secrets: the same few tuples come back on every request.
_WATCHED: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}


def _watched(secrets: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """The secrets no other one contains (``token X`` holds ``X``): a response holds one of the
    secrets exactly when it holds one of these, so these are all there is to look for."""
    try:
        return _WATCHED[secrets]
    except KeyError:
        pass
    except TypeError:  # not a tuple: nothing to remember it by
        secrets = tuple(secrets)
    given = set(filter(None, secrets))
    watch = tuple(s for s in given if not any(other != s and other in s for other in given))
    if len(_WATCHED) >= 64:
        _WATCHED.clear()
    _WATCHED[secrets] = watch
    return watch


def _holds(data: bytes, needles: Sequence[bytes]) -> bool:
    """Whether any of ``needles`` is in ``data`` (``find``, not ``in``: see canary._plain)."""
    if len(needles) == 1:
        return data.find(needles[0]) >= 0
    return any(data.find(needle) >= 0 for needle in needles)


class ScrubAndRecord:
    """Scrubs every response; writes decided exchanges to ``gitvow_record`` when it is set."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.recorder: Recorder | None = None

    def load(self, loader: Any) -> None:
        loader.add_option("gitvow_record", str, "", "write the agents' flows, without credentials, canaries or cookies, "
                          "to this mitmproxy flow file (+FILE appends).")

    def configure(self, updated: set[str]) -> None:
        if "gitvow_record" not in updated:
            return
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
        if ctx.options.gitvow_record:
            try:
                self.recorder = Recorder(ctx.options.gitvow_record)
            except GitvowError as exc:
                raise exceptions.OptionsError(f"gitvow_record: {exc}") from None  # type: ignore[no-untyped-call]

    def done(self) -> None:
        if self.recorder is not None:
            self.recorder.close()

    def response(self, flow: http.HTTPFlow) -> None:
        scrub(flow)
        if self.recorder is not None:
            self._record(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        if self.recorder is not None:
            self._record(flow)

    def _record(self, flow: http.HTTPFlow) -> None:
        entry: Audited | None = flow.metadata.get(AUDIT_KEY)
        recorder = self.recorder
        if entry is None or recorder is None or entry.runtime is None or entry.agent is None:
            return
        flow.metadata.pop(AUDIT_KEY, None)  # one exchange, one recorded flow
        runtime = entry.runtime
        stamp = {"path": runtime.source or "", "sha256": runtime.sha256}
        try:
            recorder.write(sanitized(flow, {**entry.recording_info(), "policy": stamp}, redactor_of(runtime),
                                     entry.injected))
        except Exception as exc:  # a recording that fails must not take the proxy down
            log.error("gitvow: cannot write the recording %s: %s: %s", recorder.path, type(exc).__name__, exc)


__all__ = ["ScrubAndRecord", "scrub"]
