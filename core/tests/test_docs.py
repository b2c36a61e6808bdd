"""The documentation is a tested contract (as datasette's tests/test_docs.py makes it).

- docs/writing-a-plugin.md names every hook of :mod:`gitvow.hookspecs`, every public member
  of :class:`gitvow.adapter.Adapter`, every field of ``Request``, ``Classification``,
  ``Fixture`` and ``ToolCall``, and every operation of the vocabulary;
- docs/policy.md documents every key of the policy file as installed here: the core's
  (:class:`~gitvow.policy.model.CorePolicy`, nested keys included), every section a plugin
  registered (``gitvow.plugins.installed().sections``: the proxy's and the gate's in tox's
  ``all`` environment) and every installed adapter's typed options. A top-level key needs a
  heading of its own; a nested key must be named (`` `key` `` or ``key =``) in its top-level
  key's part of the page.
- every TOML example in docs/policy.md whose keys are all installed here validates.

Adding a hook, an adapter member or a policy key without documenting it fails here.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from gitvow import hookspecs
from gitvow.adapter import Adapter, configure_adapters
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.policy.model import CorePolicy, composed_model
from gitvow.request import Classification, Fixture, Request, ToolCall
from gitvow.vocabulary import OPERATIONS

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "writing-a-plugin.md"
POLICY = DOCS / "policy.md"
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$", re.MULTILINE)
_TOML = re.compile(r"^```toml\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


@pytest.fixture(scope="module")
def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def policy_doc() -> str:
    return POLICY.read_text(encoding="utf-8")


def _named(text: str, name: str) -> bool:
    """``name`` as code: `` `name` ``, `` `name(…)` ``, `` `name = …` ``, or a TOML ``name =``."""
    word = re.escape(name)
    return bool(
        re.search(rf"`{word}(?:[`(\s=]|\.\.\.)", text)
        or re.search(rf"(?:^|[{{,]\s*|^\s*)\"?{word}\"?\s*=", text, re.MULTILINE)
    )


# -- the plugin guide -----------------------------------------------------------------------


def hook_names() -> list[str]:
    return sorted(name for name, value in vars(hookspecs).items()
                  if callable(value) and hasattr(value, hookspecs.SPEC_MARK))


def adapter_members() -> list[str]:
    names = {name for name in vars(Adapter) if not name.startswith("_")}
    names.update(name for name in Adapter.__annotations__ if not name.startswith("_"))
    return sorted(names)


def test_the_hooks_and_adapter_members_are_found() -> None:
    """The lists below are not vacuous."""
    assert {"register_adapters", "register_relays", "register_policy_sections"} <= set(hook_names())
    assert {"name", "default_hosts", "classify", "fixtures", "unsupported", "not_implemented"} <= set(adapter_members())


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_is_in_the_plugin_guide(guide: str, hook: str) -> None:
    assert _named(guide, hook), f"docs/writing-a-plugin.md does not document the hook {hook!r}"


@pytest.mark.parametrize("member", adapter_members())
def test_every_adapter_member_is_in_the_plugin_guide(guide: str, member: str) -> None:
    assert _named(guide, member), f"docs/writing-a-plugin.md does not document Adapter.{member}"


@pytest.mark.parametrize("kind", [Request, Classification, Fixture, ToolCall], ids=lambda k: k.__name__)
def test_what_adapters_read_and_answer_is_in_the_plugin_guide(guide: str, kind: type) -> None:
    assert f"**`{kind.__name__}`**" in guide, f"docs/writing-a-plugin.md has no paragraph on {kind.__name__}"
    missing = [f.name for f in dataclasses.fields(kind) if not _named(guide, f.name)]
    assert not missing, f"docs/writing-a-plugin.md does not name {kind.__name__}'s {', '.join(missing)}"


def test_every_check_of_the_kit_is_in_the_plugin_guide(guide: str) -> None:
    from gitvow.contract import AdapterContract

    checks = sorted(name for name in dir(AdapterContract) if name.startswith("test_"))
    assert len(checks) >= 10
    missing = [name for name in checks if f"| `{name}` |" not in guide]
    assert not missing, f"docs/writing-a-plugin.md's table of checks lacks {', '.join(missing)}"


def test_the_vocabulary_is_in_the_plugin_guide(guide: str) -> None:
    rows = dict(re.findall(r"^\| `([a-z_.]+)` \| (?:yes|no) \| (.*?) \|$", guide, re.MULTILINE))
    missing = sorted(set(OPERATIONS) - set(rows))
    assert not missing, f"docs/writing-a-plugin.md's vocabulary table lacks {', '.join(missing)}"
    assert not set(rows) - set(OPERATIONS), "the guide names operations that do not exist"


# -- the policy reference -------------------------------------------------------------------


def _leaf_models(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models a field's type holds: directly, in a list, as a dict's values, in a union."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        yield from _leaf_models(args[1])
    elif origin in (list, tuple, set, frozenset, typing.Union, types.UnionType):
        for arg in args:
            yield from _leaf_models(arg)


def nested_keys(model: type[BaseModel], seen: frozenset[type[BaseModel]] = frozenset()) -> set[str]:
    """Every key below ``model``'s fields (the field names of the models they hold), recursively."""
    keys: set[str] = set()
    for field in model.model_fields.values():
        for inner in _leaf_models(field.annotation):
            if inner in seen:
                continue
            keys.update(inner.model_fields)
            keys.update(nested_keys(inner, seen | {inner}))
    return keys


def policy_keys() -> dict[str, set[str]]:
    """Top-level key → the keys nested under it, for the whole file as installed here."""
    model = composed_model(installed().sections)
    result: dict[str, set[str]] = {}
    for name, field in model.model_fields.items():
        nested: set[str] = set()
        for inner in _leaf_models(field.annotation):
            nested.update(inner.model_fields)
            nested.update(nested_keys(inner, frozenset({inner})))
        result[name] = nested
    return result


def adapter_option_keys() -> dict[str, set[str]]:
    """Installed adapter → the keys of its typed options (``options_model()``), if any."""
    found: dict[str, set[str]] = {}
    for name, adapter in installed().adapters.items():
        model = adapter.options_model()
        if model is not None:
            found[name] = set(model.model_fields) | nested_keys(model)
    return found


def sections_of(text: str) -> list[tuple[int, str, str]]:
    """(level, heading, body up to the next heading of the same or a higher level)."""
    heads = list(_HEADING.finditer(text))
    parts = []
    for i, head in enumerate(heads):
        level = len(head.group(1))
        end = next((h.start() for h in heads[i + 1 :] if len(h.group(1)) <= level), len(text))
        parts.append((level, head.group(2), text[head.start() : end]))
    return parts


def section_for(text: str, key: str) -> str | None:
    """The part of the page under the first heading that names top-level ``key`` as code."""
    pattern = re.compile(rf"`\[*{re.escape(key)}(?:[.\]`]|\s)")
    for _level, heading, body in sections_of(text):
        if pattern.search(heading):
            return body
    return None


def test_the_policy_keys_are_found() -> None:
    keys = policy_keys()
    assert set(CorePolicy.model_fields) <= set(keys)
    assert {"min_mode", "capability", "relay", "deny"} <= keys["operations"]
    assert {"mode", "autonomy", "secret_env"} <= keys["agents"]


@pytest.mark.parametrize("key", sorted(policy_keys()))
def test_every_policy_key_is_in_the_policy_reference(policy_doc: str, key: str) -> None:
    part = section_for(policy_doc, key)
    assert part is not None, f"docs/policy.md has no heading naming `{key}`"
    missing = sorted(name for name in policy_keys()[key] if not _named(part, name))
    assert not missing, f"docs/policy.md's section on `{key}` does not name {', '.join(missing)}"


@pytest.mark.parametrize("adapter", sorted(adapter_option_keys()) or [pytest.param(None, marks=pytest.mark.skip(
    reason="no installed adapter declares typed options"))])
def test_every_adapter_option_is_in_the_policy_reference(policy_doc: str, adapter: str) -> None:
    part = section_for(policy_doc, "adapters")
    assert part is not None, "docs/policy.md has no heading naming `[adapters.NAME]`"
    missing = sorted(name for name in adapter_option_keys()[adapter] if not _named(part, name))
    assert not missing, f"docs/policy.md's `[adapters.NAME]` does not name {adapter}'s {', '.join(missing)}"


def test_the_policy_examples_validate(policy_doc: str) -> None:
    """Each TOML example whose keys (and adapters) are all installed here is a valid policy."""
    plugins = installed()
    readable = set(policy_keys())
    checked = 0
    for block in _TOML.findall(policy_doc):
        data = tomllib.loads(block)
        if not set(data) <= readable or not set(data.get("adapters", {})) <= set(plugins.adapters):
            continue
        policy = parse_policy(data, source="docs/policy.md")
        configure_adapters(plugins.adapters, policy.adapter_options, source="docs/policy.md")
        checked += 1
    assert checked, "no example in docs/policy.md could be checked"


def test_the_checks_can_fail(guide: str, policy_doc: str) -> None:
    """An undocumented name is caught: a hook, a member, a top-level key, a key nested under one."""
    assert not _named(guide, "register_no_such_hook")
    assert not _named(guide, "no_such_member")
    assert section_for(policy_doc, "no_such_section") is None
    budget = section_for(policy_doc, "budget")
    assert budget is not None and _named(budget, "window_seconds") and not _named(budget, "no_such_key")
    # a name merely mentioned in prose is not documentation
    assert not _named("the agents may run", "agents") and _named("| `agents` | x |", "agents")
