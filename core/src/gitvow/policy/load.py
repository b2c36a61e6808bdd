"""Reading a policy file (TOML or JSON by extension) into a compiled :class:`Policy`.

Every error is a :class:`PolicyError` naming the file, the key path and what was expected,
so an operator fixes a typo in one go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.modes import Mode
from gitvow.policy.document import parse_document
from gitvow.policy.model import PolicyFile
from gitvow.policy.table import PolicyRow, PolicyTable
from gitvow.relay import RelayTemplate


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated policy: the table, the relay templates, hosts and adapter options."""

    table: PolicyTable = field(default_factory=PolicyTable)
    relays: Mapping[str, RelayTemplate] = field(default_factory=dict)
    hosts: Mapping[str, str] = field(default_factory=dict)
    adapter_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    model: PolicyFile = field(default_factory=PolicyFile)
    source: str | None = None

    def grant_for(self, agent: str) -> Grant | None:
        """The grant of ``[agents.NAME]``, or None when the policy does not name that agent."""
        rule = self.model.agents.get(agent)
        if rule is None:
            return None
        return Grant(
            mode=Mode.parse(rule.mode),
            capabilities=frozenset(rule.capabilities),
            autonomy=MappingProxyType({repo.lower(): Mode.parse(m) for repo, m in rule.autonomy.items()}),
        )


def _key_path(loc: tuple[int | str, ...]) -> str:
    parts = []
    for part in loc:
        text = str(part)
        parts.append(text if text.replace("_", "").isalnum() else repr(text))
    return ".".join(parts) or "(top level)"


def validation_error(exc: ValidationError, source: str | None) -> PolicyError:
    """Turn pydantic's report into one line per problem, each with its key path."""
    problems = []
    for error in exc.errors():
        msg = error["msg"]
        if error["type"] == "extra_forbidden":
            msg = "unknown key (typo?)"
        problems.append(f"{_key_path(error['loc'])}: {msg}")
    first = problems[0] if problems else str(exc)
    more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:])})" if len(problems) > 1 else ""
    return PolicyError(first + more, source=source)


def read_document(path: Path) -> dict[str, Any]:
    """Parse TOML or JSON by extension; syntax errors name the file and position."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"cannot read: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError:
        raise PolicyError("not UTF-8 text", source=source) from None
    return parse_document(source, text)


def compile_policy(
    model: PolicyFile, *, source: str | None = None, relays: Mapping[str, RelayTemplate] | None = None
) -> Policy:
    """Validate cross-references (operations, relays) and build the table."""
    templates: dict[str, RelayTemplate] = dict(relays or {})
    for command, relay_rule in model.relays.items():
        templates[command] = RelayTemplate(command, relay_rule.usage, relay_rule.what)
    rows: dict[str, PolicyRow] = {}
    for name, rule in model.operations.items():
        if rule.relay is not None and rule.relay not in templates:
            known = ", ".join(sorted(templates)) or "none"
            raise PolicyError(
                f"relay {rule.relay!r} is not defined; add [relays.{rule.relay}] or use one of: {known}",
                source=source,
                key=f"operations.{name!r}.relay",
            )
        rows[name] = PolicyRow(
            min_mode=Mode.parse(rule.min_mode) if rule.min_mode else Mode.ADVISORY,
            capability=rule.capability,
            relay=rule.relay,
            deny=rule.deny,
        )
    table = PolicyTable(rows, source=source)
    return Policy(
        table=table,
        relays=templates,
        hosts=dict(model.hosts),
        adapter_options={k: dict(v) for k, v in model.adapters.items()},
        model=model,
        source=source,
    )


def parse_policy(
    data: Mapping[str, Any], *, source: str | None = None, relays: Mapping[str, RelayTemplate] | None = None
) -> Policy:
    try:
        model = PolicyFile.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source) from None
    return compile_policy(model, source=source, relays=relays)


def load_policy(path: str | Path, *, relays: Mapping[str, RelayTemplate] | None = None) -> Policy:
    """Read and validate a policy file. ``relays`` are the installed templates."""
    path = Path(path)
    return parse_policy(read_document(path), source=str(path), relays=relays)
