"""Reading a policy file (TOML or JSON by extension) into a compiled :class:`Policy`.

The core validates its own keys (:class:`~gitvow.policy.model.CorePolicy`); each installed
enforcement point validates the sections it registered (:mod:`gitvow.policy.sections`). A key
nobody installed reads is an error: a typo is named as one, and a key of a shipped
enforcement point that is not installed names the distribution to install. Every error is a
:class:`PolicyError` naming the file, the key path and what was expected, all problems of a
file in one message, so an operator fixes them in one go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from gitvow.errors import PolicyError
from gitvow.policy import compile as build
from gitvow.policy.compile import CompiledPolicy
from gitvow.policy.document import parse_document
from gitvow.policy.model import CorePolicy
from gitvow.policy.sections import PolicySection, install_hint, owner_of
from gitvow.relay import RelayTemplate

#: What to do with a key of a shipped enforcement point that is not installed: ``error``
#: (``gitvow policy check``) or ``skip`` (an enforcement point loading the file it shares
#: with the other one; it reads none of those keys).
Absent = Literal["error", "skip"]


@dataclass(frozen=True, slots=True)
class Policy(CompiledPolicy):
    """A validated policy: the compiled policy (:class:`~gitvow.policy.compile.CompiledPolicy`,
    what the engine judges with) plus the validated model and sections the loader produced."""

    model: CorePolicy = field(default_factory=CorePolicy)
    #: The validated sections, by model; filled at load for every installed section.
    sections: dict[type[BaseModel], BaseModel] = field(default_factory=dict)
    #: The document as read (comments removed), so a section model not registered at load
    #: time is still validated from the file, never defaulted.
    data: Mapping[str, Any] = field(default_factory=dict)
    #: Names of the adapters installed when the file was loaded, for cross-reference checks
    #: (``[credentials.NAME]``); None when the caller did not say (nothing is checked against it).
    installed_adapters: frozenset[str] | None = None

    @property
    def compiled(self) -> CompiledPolicy:
        """The kernel's input alone, without the pydantic model (what the agent gate caches)."""
        return CompiledPolicy(self.table, self.relays, self.hosts, self.adapter_options, self.comment_commands,
                              self.grants, self.mcp, self.source, self.plain, self.change_rules)

    def section[S: BaseModel](self, model: type[S]) -> S:
        """The file's keys that ``model`` owns, validated by it (defaults where the file is silent)."""
        found = self.sections.get(model)
        if found is None:
            found = _validate(model, {k: v for k, v in self.data.items() if k in model.model_fields}, self.source)
            self.sections[model] = found
        if not isinstance(found, model):
            raise TypeError("internal error: found is not model")
        return found


def _key_path(loc: tuple[int | str, ...]) -> str:
    parts = []
    for part in loc:
        text = str(part)
        parts.append(text if text.replace("_", "").isalnum() else repr(text))
    return ".".join(parts) or "(top level)"


def _problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors():
        msg = error["msg"]
        if error["type"] == "extra_forbidden":
            msg = "unknown key (typo?)"
        problems.append(f"{_key_path(error['loc'])}: {msg}")
    return problems or [str(exc)]


def _one_error(problems: list[str], source: str | None) -> PolicyError:
    first = problems[0]
    more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:])})" if len(problems) > 1 else ""
    return PolicyError(first + more, source=source)


def validation_error(exc: ValidationError, source: str | None) -> PolicyError:
    """Turn pydantic's report into one line per problem, each with its key path."""
    return _one_error(_problems(exc), source)


def _validate[S: BaseModel](model: type[S], data: Mapping[str, Any], source: str | None) -> S:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source) from None


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


def plain_form(model: CorePolicy) -> dict[str, Any]:
    """The core's validated tables as plain data, the input of :func:`gitvow.policy.compile.compile_policy`."""
    plain: dict[str, Any] = {}
    for key in build.PLAIN_KEYS:
        table = getattr(model, key)
        if isinstance(table, BaseModel):  # a section of fixed keys ([branches], [paths], [size], [secrets])
            plain[key] = table.model_dump()
        else:
            plain[key] = {name: (value.model_dump() if isinstance(value, BaseModel) else value)
                          for name, value in table.items()}
    return plain


def compile_policy(
    model: CorePolicy,
    *,
    source: str | None = None,
    relays: Mapping[str, RelayTemplate] | None = None,
    sections: dict[type[BaseModel], BaseModel] | None = None,
    data: Mapping[str, Any] | None = None,
) -> Policy:
    """Validate cross-references (operations, relays) and build the table, through :mod:`gitvow.policy.compile`."""
    compiled = build.compile_policy(plain_form(model), relays, source=source)
    return Policy(
        table=compiled.table,
        relays=compiled.relays,
        hosts=compiled.hosts,
        adapter_options=compiled.adapter_options,
        comment_commands=compiled.comment_commands,
        grants=compiled.grants,
        mcp=compiled.mcp,
        source=source,
        plain=compiled.plain,
        change_rules=compiled.change_rules,
        model=model,
        sections=dict(sections or {}),
        data=dict(data or {}),
    )


def parse_policy(
    data: Mapping[str, Any],
    *,
    source: str | None = None,
    relays: Mapping[str, RelayTemplate] | None = None,
    sections: Iterable[PolicySection] | None = None,
    absent: Absent = "error",
    adapters: Iterable[str] | None = None,
) -> Policy:
    """Validate ``data`` against the core and the installed sections (default: discovered).

    After every key validated on its own, the cross-references are checked — the core's
    (:func:`gitvow.policy.checks.core_problems`) and each section's ``check`` — so a file that
    loads is one that no enforcement point would refuse or silently ignore. ``adapters`` are
    the installed adapter names (default: discovered with the sections).
    """
    if sections is None or relays is None or adapters is None:
        from gitvow.plugins import installed

        plugins = installed()
        sections = plugins.sections if sections is None else sections
        relays = plugins.relays if relays is None else relays
        adapters = plugins.adapters if adapters is None else adapters
    owners: dict[str, PolicySection] = {key: section for section in sections for key in section.keys}
    document = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("_"))}  # 0.42's comments
    core, parts, problems = _partition(document, owners, absent)
    validated: dict[type[BaseModel], BaseModel] = {}
    model = CorePolicy()
    try:
        model = CorePolicy.model_validate(core)
    except ValidationError as exc:
        problems.extend(_problems(exc))
    for section in dict.fromkeys(owners.values()):
        try:
            validated[section.model] = section.model.model_validate(parts.get(section, {}))
        except ValidationError as exc:
            problems.extend(_problems(exc))
    if problems:
        raise _one_error(problems, source)
    policy = compile_policy(model, source=source, relays=relays, sections=validated, data=document)
    policy = replace(policy, installed_adapters=frozenset(adapters))
    problems = _cross_problems(policy, owners, validated)
    if problems:
        raise _one_error(problems, source)
    return policy


def _partition(
    document: Mapping[str, Any], owners: Mapping[str, PolicySection], absent: Absent
) -> tuple[dict[str, Any], dict[PolicySection, dict[str, Any]], list[str]]:
    """The core's keys, each section's keys, and the keys nobody installed reads."""
    core: dict[str, Any] = {}
    parts: dict[PolicySection, dict[str, Any]] = {}
    problems: list[str] = []
    for key, value in document.items():
        if key in CorePolicy.model_fields:
            core[key] = value
        elif key in owners:
            parts.setdefault(owners[key], {})[key] = value
        elif (distribution := owner_of(key)) is not None:
            if absent == "error":
                problems.append(f"{key}: read by {distribution}, which is not installed; {install_hint(distribution)}")
        else:
            problems.append(f"{key}: unknown key (typo?)")
    return core, parts, problems


def _cross_problems(policy: Policy, owners: Mapping[str, PolicySection],
                    validated: Mapping[type[BaseModel], BaseModel]) -> list[str]:
    """The core's cross-reference problems, then each section's ``check``'s."""
    from gitvow.policy.checks import core_problems

    problems = core_problems(policy)
    for section in dict.fromkeys(owners.values()):
        if section.check is not None and section.model in validated:
            try:
                problems.extend(section.check(policy))
            except Exception as exc:  # a section's check that breaks refuses the file, by name
                problems.append(f"({section.distribution}): its policy check failed: {type(exc).__name__}: {exc}")
    return problems


def load_policy(
    path: str | Path,
    *,
    relays: Mapping[str, RelayTemplate] | None = None,
    sections: Iterable[PolicySection] | None = None,
    absent: Absent = "error",
    adapters: Iterable[str] | None = None,
) -> Policy:
    """Read and validate a policy file against the installed relays, sections and adapters."""
    path = Path(path)
    return parse_policy(read_document(path), source=str(path), relays=relays, sections=sections, absent=absent,
                        adapters=adapters)
