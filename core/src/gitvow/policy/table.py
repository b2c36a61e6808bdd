"""The policy table: for each operation, the minimum mode, an OR-granting capability, or a relay.

The compiled-in :data:`DEFAULT_TABLE` is the default policy of every operation (docs/policy.md lists it;
``gitvow ops`` prints it). An operator's
rows override single operations; an operation they leave out keeps its default row, never
"allow".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gitvow.errors import PolicyError
from gitvow.modes import CONVERSE, Mode
from gitvow.vocabulary import OPERATIONS


@dataclass(frozen=True, slots=True)
class PolicyRow:
    """One operation's rule. ``deny`` refuses at every mode; ``relay`` names a sanctioned command."""

    min_mode: Mode = Mode.ADVISORY
    capability: str | None = None
    relay: str | None = None
    deny: bool = False

    def describe(self) -> str:
        if self.deny:
            return "deny"
        if self.relay:
            return f"relay({self.relay})"
        text = self.min_mode.label
        return f"{text} or {self.capability}" if self.capability else text


def _row(mode: Mode, capability: str | None = None) -> PolicyRow:
    return PolicyRow(min_mode=mode, capability=capability)


DENY_ROW = PolicyRow(deny=True)

DEFAULT_ROWS: Mapping[str, PolicyRow] = {
    "read": _row(Mode.ADVISORY),
    "auth.login": _row(Mode.ADVISORY),
    "git.fetch": _row(Mode.ADVISORY),
    "git.push": _row(Mode.ISSUES_AND_PRS),
    "ref.write": _row(Mode.ISSUES_AND_PRS),
    "ref.force": DENY_ROW,
    "ref.delete": DENY_ROW,
    "branch.protect": _row(Mode.ISSUES_AND_PRS),
    "issue.create": _row(Mode.ISSUES_ONLY),
    "issue.edit": _row(Mode.ISSUES_ONLY),
    "issue.comment": _row(Mode.ISSUES_ONLY, CONVERSE),
    "label.add": _row(Mode.ISSUES_ONLY),
    "issue.relate": _row(Mode.ISSUES_ONLY),
    "pr.create": PolicyRow(relay="approval"),
    "pr.edit": _row(Mode.ISSUES_AND_PRS),
    "pr.review": _row(Mode.ISSUES_AND_PRS, CONVERSE),
    "pr.update_branch": _row(Mode.ISSUES_PRS_MERGE),
    "pr.merge": PolicyRow(relay="approval"),
    "agent.session": _row(Mode.ADVISORY, CONVERSE),
    "attachment.link": _row(Mode.ISSUES_AND_PRS),
    "inference.call": _row(Mode.ADVISORY),
    "unknown": DENY_ROW,
    "repo.create": DENY_ROW,
    "repo.delete": DENY_ROW,
    "repo.fork": DENY_ROW,
    "repo.admin": DENY_ROW,
    "contents.write": DENY_ROW,
    "release.write": DENY_ROW,
    "gist.write": DENY_ROW,
    "workflow.dispatch": DENY_ROW,
    "secret.write": DENY_ROW,
    "label.manage": DENY_ROW,
}


class PolicyTable(Mapping[str, PolicyRow]):
    """Every operation of the vocabulary mapped to a row; built from defaults plus overrides."""

    __slots__ = ("_rows",)

    def __init__(self, overrides: Mapping[str, PolicyRow] | None = None, *, source: str | None = None) -> None:
        rows = dict(DEFAULT_ROWS)
        for name, row in (overrides or {}).items():
            if name not in OPERATIONS:
                raise PolicyError(
                    f"unknown operation {name!r}; expected one of the vocabulary (`gitvow ops`)",
                    source=source,
                    key=f"operations.{name!r}",
                )
            if name == "unknown" and not row.deny:
                raise PolicyError("'unknown' is always denied and cannot be relaxed", source=source, key="operations.'unknown'")
            rows[name] = row
        self._rows = rows

    def __getitem__(self, name: str) -> PolicyRow:
        return self._rows.get(name, DENY_ROW)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def relays(self) -> set[str]:
        return {row.relay for row in self._rows.values() if row.relay}


DEFAULT_TABLE = PolicyTable()

if set(DEFAULT_ROWS) != set(OPERATIONS):
    raise RuntimeError("every operation needs a default row")
