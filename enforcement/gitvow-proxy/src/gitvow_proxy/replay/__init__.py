"""``gitvow replay``: which recorded requests a policy change would decide differently.

:func:`replay` reads the files (:mod:`.inputs`), re-decides every request under the new
policy and under the old one, or takes the old decision from the recording
(:mod:`.decide`), and groups what changes (:mod:`.report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitvow.errors import GitvowError
from gitvow.plugins import Plugins, installed
from gitvow_proxy.replay.decide import Replayer
from gitvow_proxy.replay.inputs import Recorded, read
from gitvow_proxy.replay.report import Report

BUDGET = "replayed from the recording's time: decided in time order, windows empty at the first request"
RUN_FLAGS = ("skipped: repositories paused or auto-merge switched off at run time are not in the recording; "
             "the policy files' [run_state] applies")
RUN_FLAGS_LOGGED = ("the audit log's pause and resume lines are replayed at their time; auto-merge switched off at "
                    "run time is not in the log; the policy files' [run_state] applies too")
IDENTITY = "from the recording (agent name only); no secret is checked, no credential injected"


def load(files: Sequence[Path], *, agent: str | None = None, workers: int | None = None) -> list[Recorded]:
    """Every request of every file, in recorded-time order (stable within a file); ``workers``
    processes read each large flow or HAR file (None: one per core above a size, see
    :mod:`.parallel`)."""
    items = [item for path in files for item in read(path, agent=agent, workers=workers)]
    items.sort(key=lambda item: item.time)
    return items


def _recorded_label(items: Sequence[Recorded]) -> str:
    stamps = {item.policy for item in items if item.policy is not None}
    if len(stamps) == 1:
        path, digest = next(iter(stamps))
        return f"as recorded under {path}" + (f" (sha256 {digest[:12]})" if digest else "")
    if stamps:
        return f"as recorded under {len(stamps)} policy versions"
    return "as recorded in the audit log"


def _note_limits(report: Report, items: Sequence[Recorded], *, as_recorded: bool) -> None:
    """What replay could not replay as it happened, stage by stage and input by input."""
    anonymous = sum(1 for item in items if item.agent is None and item.act is None)
    report.limits["identity"] = IDENTITY + (
        f"; {anonymous} request(s) name no agent and are refused as unauthenticated (pass --agent)" if anonymous else "")
    report.limits["budget"] = BUDGET
    logged = any(item.act is not None for item in items)
    report.limits["run-time flags"] = RUN_FLAGS_LOGGED if logged else RUN_FLAGS
    if as_recorded:
        report.limits["old decisions"] = ("as made at the time, with the live state of then (budget windows, "
                                          "run-time flags), which the new side starts without")
    headless = sum(1 for item in items if item.classified is not None)
    if headless:
        report.limits["body"] = (f"not re-run for {headless} audit-log line(s): the log holds no bodies; a line "
                                 "refused at the body stage keeps that refusal; operations and repository are "
                                 "the ones logged; what a write changed (branches, paths, secrets) is not "
                                 "judged again")
    held = sum(1 for item in items if item.recorded is not None and item.recorded.held)
    if held:
        report.limits["approvals"] = (f"{held} request(s) went to a human: each staged request counts once, with "
                                      "its approval's final outcome (sent, send_failed, rejected, expired, pending), "
                                      "and an identical retry answered from the record as answered; where the new "
                                      "policy stages it too, the human's answer stands")
    withheld = sum(1 for item in items if item.body_withheld)
    if withheld:
        report.limits["withheld bodies"] = (f"{withheld} body(ies) held a secret when recorded and were replaced "
                                            "by a placeholder the canary gate still recognises")


def replay(
    items: Sequence[Recorded],
    policy: str | Path,
    against: str | Path | None = None,
    *,
    plugins: Plugins | None = None,
) -> Report:
    """Re-decide ``items`` under ``policy`` (and ``against``, else as recorded); raises GitvowError."""
    plugins = plugins if plugins is not None else installed()
    if against is None:
        unsaid = next((item for item in items if item.recorded is None and item.act is None), None)
        if unsaid is not None:
            raise GitvowError(f"{unsaid.source.rpartition('#')[0] or unsaid.source}: the file does not say what was "
                              "decided when it was recorded (a HAR or a plain mitmdump file): pass --against OLD")
    new = Replayer(policy, plugins)
    old = Replayer(against, plugins) if against is not None else None
    report = Report(old_label=f"{old.path} (replayed)" if old else _recorded_label(items), new_label=f"{new.path} (replayed)")
    _note_limits(report, items, as_recorded=old is None)
    for item in items:
        if item.act is not None:
            for side in (new, old):
                if side is not None:
                    side.act(*item.act)
            continue
        before = old.decide(item) if old is not None else item.recorded
        if before is None:
            raise RuntimeError("internal error: before unset")
        report.add(item, before, new.decide(item))
    return report


__all__ = ["Report", "load", "replay"]
