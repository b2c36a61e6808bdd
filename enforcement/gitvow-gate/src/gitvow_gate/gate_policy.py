"""The gate's view of the policy: found where gitvow 0.42 found it, validated once per content.

Lookup order (the old tool's): ``<repo>/.gitvow/policy.json`` (or ``policy.toml``), then
``~/.gitvow/policy.json`` (or ``.toml``), then the packaged default. ``GITVOW_POLICY``
names a file explicitly and wins over all of them.

The hook runs on every tool call, so validation must not: a file is validated with the full
pydantic models (the core's and :mod:`gitvow_gate.gate_sections`, through :func:`gitvow.policy.load.parse_policy`)
the first time its *content* is seen, and the gate's part is written to a cache keyed by a
hash of that content. Every later call reads the file, hashes it, and builds plain frozen
dataclasses from the cached JSON: no pydantic, no plugin discovery. Editing the file changes
the hash, so an edit is validated before it takes effect; a file that fails validation is
never cached and blocks every call with the file and the error.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as replaced
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gitvow import __version__
from gitvow.errors import PolicyError
from gitvow.policy.compile import CompiledPolicy
from gitvow.policy.document import parse_document as parse

if TYPE_CHECKING:  # only annotations: gitvow.policy.load is pydantic's (see validate)
    from gitvow.policy.load import Policy
    from gitvow.policy.sections import PolicySection

QUESTIONS: tuple[str, ...] = ("gate_bearing", "route_gate", "route_callers")
WHEN_TIERS: tuple[str, ...] = ("immediate", "commit", "observe")
#: Bumped whenever the cached form changes, so an old cache entry is never misread.
CACHE_SCHEMA = 8
DEFAULT_POLICY = os.path.join(os.path.dirname(__file__), "default_policy.json")
POLICY_NAMES: tuple[str, ...] = ("policy.json", "policy.toml")

# Options that may sit between a program and its verb: ``--context prod``, ``-n ns``,
# ``--kubeconfig=x``, ``-v`` — gitvow 0.42's OPTS, kept byte for byte so its rules mean what
# they meant: ``--k=v``, ``--k v`` (v not an option or shell metacharacter), a bare flag.
OPTS = r"(?:\s+(?:-{1,2}[\w.-]+=\S*|-{1,2}[\w.-]+\s+[^-\s|;&<>()]\S*|-{1,2}[\w.-]+))*"


def command_rule_pattern(programs: tuple[str, ...], verbs: tuple[str, ...]) -> str:
    """The whole-line regex of a ``{program, verbs}`` rule, used when a line cannot be tokenised."""
    names = "|".join(re.escape(p) for p in programs)
    return rf"\b(?:{names}){OPTS}\s+(?:{'|'.join(verbs)})\b"


def verb_pattern(verbs: tuple[str, ...]) -> str:
    """The regex matched against ``" " + args`` of a command whose program matched."""
    return rf"^{OPTS}\s+(?:{'|'.join(verbs)})\b"


@dataclass(frozen=True, slots=True)
class CommandRule:
    """``bash_deny``/``bash_confirm``: a whole-line ``pattern``, or ``programs`` + ``verbs`` (+ ``target``),
    or a ``check`` on the parsed command (:mod:`gitvow_gate.protections`)."""

    reason: str
    when: str = "immediate"
    pattern: str | None = None
    programs: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    target: str | None = None
    check: str | None = None


@dataclass(frozen=True, slots=True)
class PathRule:
    """``path_confirm``: a regex on the edited file's path."""

    pattern: str
    reason: str
    when: str = "commit"


@dataclass(frozen=True, slots=True)
class Provider:
    """A provider asked factual questions about an edit: ``argv`` is ``command`` split like a shell would."""

    name: str
    argv: tuple[str, ...]
    questions: tuple[str, ...] = QUESTIONS
    timeout: float = 10.0


@dataclass(frozen=True, slots=True)
class Classifier:
    argv: tuple[str, ...]
    timeout: float = 30.0


_NO_CORE: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """What the gate needs of a policy, as plain data."""

    source: str
    bash_deny: tuple[CommandRule, ...] = ()
    bash_confirm: tuple[CommandRule, ...] = ()
    path_confirm: tuple[PathRule, ...] = ()
    mcp_allow: tuple[str, ...] = ()
    mcp_deny: tuple[str, ...] = ()
    providers: tuple[Provider, ...] = ()
    classifier: Classifier | None = None
    agents: frozenset[str] = frozenset()
    ignored: tuple[str, ...] = ()
    #: ``keep`` (built-in rules layered under this file's), ``replace`` (this file's rules
    #: alone), or ``builtin`` (the packaged default itself is in force).
    builtin_rules: str = "keep"
    #: The core's compiled policy as JSON (:meth:`gitvow.policy.compile.CompiledPolicy.to_plain`):
    #: what the forge stage hands the engine, so it never needs the pydantic model either.
    core: Mapping[str, Any] = _NO_CORE

    def compiled(self) -> CompiledPolicy:
        """The kernel's compiled policy, built from the cached plain form (no pydantic)."""
        return CompiledPolicy.from_plain(self.core, source=self.source)

    # -- the cached form ----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": CACHE_SCHEMA,
            "source": self.source,
            "bash_deny": [_rule_json(r) for r in self.bash_deny],
            "bash_confirm": [_rule_json(r) for r in self.bash_confirm],
            "path_confirm": [[r.pattern, r.reason, r.when] for r in self.path_confirm],
            "mcp_allow": list(self.mcp_allow),
            "mcp_deny": list(self.mcp_deny),
            "providers": [[p.name, list(p.argv), list(p.questions), p.timeout] for p in self.providers],
            "classifier": [list(self.classifier.argv), self.classifier.timeout] if self.classifier else None,
            "agents": sorted(self.agents),
            "ignored": list(self.ignored),
            "builtin_rules": self.builtin_rules,
            "core": dict(self.core),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str) -> GatePolicy:
        classifier = data.get("classifier")
        return cls(
            source=source,
            bash_deny=tuple(_rule_from(r) for r in data["bash_deny"]),
            bash_confirm=tuple(_rule_from(r) for r in data["bash_confirm"]),
            path_confirm=tuple(PathRule(p, r, w) for p, r, w in data["path_confirm"]),
            mcp_allow=tuple(data["mcp_allow"]),
            mcp_deny=tuple(data["mcp_deny"]),
            providers=tuple(Provider(n, tuple(a), tuple(q), float(t)) for n, a, q, t in data["providers"]),
            classifier=Classifier(tuple(classifier[0]), float(classifier[1])) if classifier else None,
            agents=frozenset(data["agents"]),
            ignored=tuple(data["ignored"]),
            builtin_rules=data["builtin_rules"],
            core=data["core"],
        )


def _rule_json(rule: CommandRule) -> list[Any]:
    return [rule.reason, rule.when, rule.pattern, list(rule.programs), list(rule.verbs), rule.target, rule.check]


def _rule_from(row: list[Any]) -> CommandRule:
    reason, when, pattern, programs, verbs, target, check = row
    return CommandRule(reason, when, pattern, tuple(programs), tuple(verbs), target, check)


# -- lookup ---------------------------------------------------------------------------


def find_repo_root(start: str) -> str | None:
    """The nearest directory at or above ``start`` that holds ``.git`` (a checkout or worktree)."""
    here = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _in_dir(directory: str) -> str | None:
    found = [os.path.join(directory, name) for name in POLICY_NAMES if os.path.isfile(os.path.join(directory, name))]
    if len(found) > 1:
        raise PolicyError(
            f"both {POLICY_NAMES[0]} and {POLICY_NAMES[1]} exist; keep one so it is clear which applies",
            source=directory,
        )
    return found[0] if found else None


def locate(cwd: str, *, home: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The policy file that applies in ``cwd`` (see the module docstring for the order)."""
    env = os.environ if env is None else env
    explicit = env.get("GITVOW_POLICY")
    if explicit:
        return explicit
    repo = find_repo_root(cwd) or os.path.abspath(cwd)
    found = _in_dir(os.path.join(repo, ".gitvow"))
    if found:
        return found
    home = home or env.get("HOME") or os.path.expanduser("~")
    found = _in_dir(os.path.join(home, ".gitvow"))
    return found or DEFAULT_POLICY


# -- the content cache ----------------------------------------------------------------


def cache_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if env.get("GITVOW_CACHE_DIR"):
        return env["GITVOW_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gitvow", "gate")


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def _digest(path: str, content: bytes) -> str:
    """The cache entry's name. A CRC is cheap to compute (no hashlib import on the hot path);
    the entry also stores the content itself, compared byte for byte before it is trusted."""
    salt = f"{CACHE_SCHEMA}\0{__version__}\0{_suffix(path)}\0".encode()
    return f"{zlib.crc32(content, zlib.crc32(salt)):08x}-{len(content)}"


def load(cwd: str, *, home: str | None = None, env: Mapping[str, str] | None = None) -> GatePolicy:
    """The gate policy for ``cwd``; raises :class:`PolicyError` naming the file and the error."""
    path = locate(cwd, home=home, env=env)
    return load_file(path, env=env)


def load_file(path: str, *, env: Mapping[str, str] | None = None) -> GatePolicy:
    try:
        with open(path, "rb") as fh:
            content = fh.read()
    except OSError as exc:
        raise PolicyError(f"cannot read: {exc.strerror or exc}", source=path) from None
    digest = _digest(path, content)
    entry = os.path.join(cache_dir(env), digest + ".json")
    try:
        with open(entry, encoding="utf-8") as fh:
            cached = json.load(fh)
        if cached.get("schema") == CACHE_SCHEMA and cached.get("content") == content.decode("utf-8", "replace"):
            return GatePolicy.from_json(cached, path)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # no entry, or one we cannot read: validate afresh
    policy = validate(path, content)
    _write_cache(entry, policy, content)
    return policy


def _write_cache(entry: str, policy: GatePolicy, content: bytes) -> None:
    try:
        os.makedirs(os.path.dirname(entry), mode=0o700, exist_ok=True)
        tmp = f"{entry}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({**policy.to_json(), "content": content.decode("utf-8", "replace")}, fh)
        os.replace(tmp, entry)
    except OSError:
        return  # a cache that cannot be written costs speed, never correctness
    _prune(os.path.dirname(entry), keep=entry)


#: Entries older than this are removed when a new one is written (an entry still in use is
#: simply validated and written again).
CACHE_MAX_AGE = 30 * 24 * 3600


def _prune(directory: str, *, keep: str) -> None:
    cutoff = time.time() - CACHE_MAX_AGE
    try:
        with os.scandir(directory) as entries:
            for item in entries:
                if item.path != keep and item.name.endswith(".json") and item.stat().st_mtime < cutoff:
                    os.unlink(item.path)
    except OSError:
        pass


def parse_document(path: str, content: bytes) -> dict[str, Any]:
    """TOML or JSON by extension; errors name the file and the position."""
    return parse(path, content.decode("utf-8", errors="replace"))


def _sections_read(sections: Sequence[PolicySection], data: Mapping[str, Any]) -> list[PolicySection]:
    """The gate's own sections, and every other one the document sets a key of.

    Another distribution's section the file does not mention holds only its defaults, and
    their checks are about that distribution's machine, not the policy: the proxy's default
    audit log must be creatable where the proxy runs, which says nothing where the gate runs
    (inside ``gitvow run``, the proxy's directories are hidden)."""
    return [section for section in sections
            if section.distribution == "gitvow-gate" or any(key in data for key in section.keys)]


def validate(path: str, content: bytes) -> GatePolicy:
    """Full validation (the gate's sections and every other the file sets keys of, operation
    table, relays), then the gate's plain form.

    Keys of the proxy are accepted unread when gitvow-proxy is not installed (one file serves
    both; ``gitvow policy check`` is where a missing distribution is an error).
    """
    # Only when a file's content is seen for the first time: the compiled-policy cache exists
    # so that a hook decided in-process needs neither plugin discovery nor pydantic.
    from gitvow.plugins import installed
    from gitvow.policy.load import parse_policy

    data = parse_document(path, content)
    plugins = installed()
    policy = parse_policy(data, source=path, relays=plugins.relays, sections=_sections_read(plugins.sections, data),
                          absent="skip", adapters=plugins.adapters)
    return from_policy(policy, path, data)


def from_policy(policy: Policy, path: str, data: Mapping[str, Any] | None = None) -> GatePolicy:
    """The gate's plain form of a validated policy (``path`` is its file, ``data`` the document
    as read), built-in rules layered."""
    # gate_sections imports this module (a cycle), and pydantic: only on the validation path
    from gitvow_gate.gate_sections import GateSections, ignored_keys

    # The core's compiled policy, cached in the plain form gitvow.policy.compile builds it
    # from again: one path builds the table for the proxy and the gate.
    own = compile_gate(policy.section(GateSections), agents=policy.model.agents, source=path,
                       ignored=ignored_keys(dict(policy.data if data is None else data)),
                       core=policy.compiled.to_plain())
    if os.path.abspath(path) == os.path.abspath(DEFAULT_POLICY):
        return replace(own, builtin_rules="builtin")
    if own.builtin_rules == "replace":
        return own
    return layered(builtin_rules(), own)


def replace(policy: GatePolicy, **changes: Any) -> GatePolicy:
    """``policy`` with some fields changed."""
    return replaced(policy, **changes)


def builtin_rules() -> GatePolicy:
    """The packaged default's rules, validated (only ever on the validation path)."""
    from gitvow_gate.gate_sections import GateSections  # a cycle, and pydantic (see from_policy)

    with open(DEFAULT_POLICY, "rb") as fh:
        data = parse_document(DEFAULT_POLICY, fh.read())
    model = GateSections.model_validate({k: v for k, v in data.items() if k in GateSections.model_fields})
    return compile_gate(model, agents={}, source=DEFAULT_POLICY)


def layered(base: GatePolicy, own: GatePolicy) -> GatePolicy:
    """``own``'s rules first (its reasons are the ones shown when both match), then every built-in
    rule it does not already hold: a file adds protections, it never removes one by omission.
    The allow list, providers, classifier and agents are the file's own (the built-ins have none)."""

    def merge[T](mine: tuple[T, ...], builtin: tuple[T, ...]) -> tuple[T, ...]:
        return mine + tuple(rule for rule in builtin if rule not in mine)

    return replace(
        own,
        bash_deny=merge(own.bash_deny, base.bash_deny),
        bash_confirm=merge(own.bash_confirm, base.bash_confirm),
        path_confirm=merge(own.path_confirm, base.path_confirm),
        mcp_deny=merge(own.mcp_deny, base.mcp_deny),
        builtin_rules="keep",
    )


def compile_gate(
    model: Any,
    *,
    agents: Mapping[str, Any],
    source: str,
    ignored: list[str] | None = None,
    core: Mapping[str, Any] | None = None,
) -> GatePolicy:
    """Build the gate's plain form from validated :class:`~gitvow_gate.gate_sections.GateSections` and agents."""
    def command_rule(rule: Any, default_reason: str) -> CommandRule:
        programs: tuple[str, ...] = ()
        if rule.program is not None:
            programs = (rule.program,) if isinstance(rule.program, str) else tuple(rule.program)
        return CommandRule(
            reason=rule.reason or default_reason,
            when=rule.when or "immediate",
            pattern=rule.pattern,
            programs=programs,
            verbs=tuple(rule.verbs or ()),
            target=rule.target,
            check=rule.check,
        )

    def argv(command: str | list[str]) -> tuple[str, ...]:
        return tuple(command) if isinstance(command, list) else tuple(shlex.split(command))

    classifier = model.llm_classifier
    return GatePolicy(
        source=source,
        bash_deny=tuple(command_rule(r, "denied") for r in model.bash_deny),
        bash_confirm=tuple(command_rule(r, "needs confirmation") for r in model.bash_confirm),
        path_confirm=tuple(PathRule(r.pattern, r.reason or "sensitive path", r.when or "commit") for r in model.path_confirm),
        mcp_allow=tuple(model.mcp_allow),
        mcp_deny=tuple(model.mcp_deny),
        providers=tuple(Provider(p.name, argv(p.command), tuple(p.questions), float(p.timeout)) for p in model.providers),
        classifier=(
            Classifier(argv(classifier.command), float(classifier.timeout))
            if classifier is not None and classifier.enabled
            else None
        ),
        agents=frozenset(agents),
        ignored=tuple(ignored or ()),
        builtin_rules=model.builtin_rules,
        core=core if core is not None else _NO_CORE,
    )
