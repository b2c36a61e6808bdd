"""The contract checks, written once and inherited by each adapter's test class.

Each check collects every violation before failing, so one run shows an adapter author
everything that is wrong, not the first thing.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import pytest

from gitvow import denial
from gitvow.adapter import Adapter
from gitvow.evaluator import Grant, evaluate_operation
from gitvow.gates import Caller
from gitvow.modes import CAPABILITIES, Mode
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy
from gitvow.policy.table import DEFAULT_TABLE
from gitvow.relay import APPROVAL
from gitvow.request import Classification, Fixture, Request
from gitvow.verdict import Outcome
from gitvow.vocabulary import OPERATIONS, UNKNOWN

UNMATCHED_PATH = "/__gitvow_contract__/no/such/route"


def _host_key(request: Request) -> str:
    default = 443 if request.scheme == "https" else 80
    return request.host if request.port == default else f"{request.host}:{request.port}"


def engine_for(adapter: Adapter, fixtures: Sequence[Fixture] = ()) -> Engine:
    """An engine with the default policy in which ``adapter`` serves its hosts and its fixtures' hosts."""
    hosts = {_host_key(f.request()): adapter.name for f in fixtures}
    hosts.update({host: adapter.name for host in adapter.default_hosts})
    plugins = Plugins.of(adapters=[adapter], relays=[APPROVAL])
    return Engine(Policy(hosts=hosts), plugins)


def every_grant() -> Iterator[Grant]:
    """Each mode, with and without every capability."""
    for mode in Mode:
        yield Grant(mode)
        yield Grant(mode, frozenset(CAPABILITIES))


def grant_label(grant: Grant) -> str:
    """``issues_only`` or ``issues_only+converse``: how a failure names the mode it was seen at."""
    return "+".join([grant.mode.label, *sorted(grant.capabilities)])


def _fail(problems: list[str], title: str, *, tracebacks: Iterable[str] = ()) -> None:
    if problems:
        text = f"{title} ({len(problems)}):\n  " + "\n  ".join(problems)
        shown = list(dict.fromkeys(tracebacks))
        if shown:
            text += "\n\nthe adapter raised:\n\n" + "\n".join(shown[:3])
        pytest.fail(text, pytrace=False)


def _traceback(exc: BaseException) -> str:
    """The adapter's traceback, so an author sees the line that raised, not the kit's."""
    return "".join(traceback.format_exception(exc)).rstrip()


class Classified:
    """What ``adapter.classify`` gave for one request: a result, or the exception it raised."""

    __slots__ = ("error", "result", "traceback")

    def __init__(self, adapter: Adapter, request: Request) -> None:
        self.result: object = None
        self.error: Exception | None = None
        self.traceback = ""
        try:
            self.result = adapter.classify(request)
        except Exception as exc:
            self.error, self.traceback = exc, _traceback(exc)

    @property
    def classification(self) -> Classification | None:
        return self.result if isinstance(self.result, Classification) else None

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        if self.classification is None:
            return f"returned {type(self.result).__name__}, not a Classification"
        return f"classified as {','.join(self.classification.operations) or '(nothing)'}"


def _declared(adapter: Adapter) -> tuple[dict[str, str], dict[str, str]]:
    return dict(adapter.unsupported()), dict(adapter.not_implemented())


class AdapterContract:
    """Inherit this and provide an ``adapter`` fixture returning the adapter under test."""

    @pytest.fixture
    def fixtures(self, adapter: Adapter) -> list[Fixture]:
        return list(adapter.fixtures())

    @pytest.fixture
    def engine(self, adapter: Adapter, fixtures: list[Fixture]) -> Engine:
        return engine_for(adapter, [*fixtures, *adapter.fail_closed_fixtures()])

    @pytest.fixture
    def registry(self) -> Plugins:
        """The plugins that must register the adapter: those installed in this environment."""
        return installed()

    # -- identity -------------------------------------------------------------------------

    def test_declares_name_and_hosts(self, adapter: Adapter) -> None:
        problems = []
        name = getattr(adapter, "name", None)
        if not isinstance(name, str) or not name or name != name.strip().lower():
            problems.append(f"name must be a non-empty lower-case string, got {name!r}")
        for host in adapter.default_hosts:
            if not isinstance(host, str) or host != host.lower() or "/" in host:
                problems.append(f"default host {host!r} must be a lower-case host or host:port")
        _fail(problems, "adapter identity")

    def test_options(self, adapter: Adapter) -> None:
        """``options_model()`` is None or a model that refuses unknown keys and whose defaults
        (an empty ``[adapters.NAME]``) validate and are accepted by ``configure``."""
        from gitvow.adapter import configured
        from gitvow.errors import PolicyError

        model = adapter.options_model()
        if model is None:
            return
        problems = []
        try:
            configured(adapter, {})
        except PolicyError as exc:
            problems.append(f"an empty [adapters.{adapter.name}] is refused: {exc}")
        try:
            configured(adapter, {"__gitvow_contract_unknown__": 1})
            problems.append(f"{model.__name__} accepts an unknown key")
        except PolicyError:
            pass
        _fail(problems, "adapter options")

    def test_registered_by_its_plugin(self, adapter: Adapter, registry: Plugins) -> None:
        """An installed plugin (an entry point of the ``gitvow`` group) loads and registers this adapter.

        A plugin whose entry point cannot be imported, whose hook implementation is misspelled
        or raises, or that registers another adapter under this name fails here: tested only
        as a class, it would pass the kit and do nothing once installed.
        """
        problems: list[str] = []
        name = adapter.name
        registered = registry.adapters.get(name)
        failures = registry.failures
        if registered is None:
            installed_names = ", ".join(sorted(registry.adapters)) or "none"
            problems.append(
                f"no installed plugin registers an adapter named {name!r} (registered: {installed_names}); install the "
                "distribution, with an entry point in [project.entry-points.gitvow] naming the module whose "
                "@hookimpl register_adapters registers it"
            )
            problems.extend(f"failed: {failure}" for failure in failures)
        else:
            plugin = registry.adapter_plugin[name]
            if type(registered) is not type(adapter):
                problems.append(
                    f"plugin {plugin!r} registers {name!r} as {type(registered).__module__}.{type(registered).__qualname__}, "
                    f"but the kit tests {type(adapter).__module__}.{type(adapter).__qualname__}"
                )
            problems.extend(f"failed: {failure}" for failure in failures if failure.plugin == plugin)
        _fail(problems, "registration")

    # -- 1. completeness ------------------------------------------------------------------

    def test_completeness(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Every operation has a wire example, an ``unsupported()`` reason or a ``not_implemented()`` note."""
        examples = [*fixtures, *adapter.fail_closed_fixtures()]
        exemplified = {op for f in examples for op in f.operations}
        unsupported, pending = _declared(adapter)
        problems = []
        for method, declared in (("unsupported", unsupported), ("not_implemented", pending)):
            for name in sorted(set(declared) - set(OPERATIONS)):
                problems.append(f"{method}() names {name!r}, which is not in the vocabulary")
            if UNKNOWN in declared:
                problems.append(f"{method}() names {UNKNOWN!r}: ship fail_closed_fixtures() instead")
            for name, reason in sorted(declared.items()):
                if not isinstance(reason, str) or not reason.strip():
                    problems.append(f"{method} {name!r} needs a one-line reason")
                if name in exemplified:
                    problems.append(f"{name!r} is both {method} and has a fixture")
        for name in sorted(set(unsupported) & set(pending)):
            problems.append(f"{name!r} is both unsupported (the forge cannot express it) and not_implemented (it can)")
        for name in OPERATIONS:
            if name not in exemplified and name not in unsupported and name not in pending:
                problems.append(f"{name!r}: no fixture, no unsupported() reason and no not_implemented() note")
        _fail(problems, "completeness")

    def test_declared_operations_are_never_classified(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """No request comes back as an operation declared ``unsupported`` or ``not_implemented``.

        A not-implemented operation's requests must fall through to ``unknown`` (denied at
        every mode); an adapter that classifies one has implemented it, and one that
        classifies an unsupported operation contradicts its own declaration.
        """
        unsupported, pending = _declared(adapter)
        declared = {**{op: "unsupported" for op in unsupported}, **{op: "not_implemented" for op in pending}}
        problems: list[str] = []
        if declared:
            for label, request in _probe_requests(adapter, fixtures):
                seen = Classified(adapter, request)
                got = seen.classification
                if got is None:
                    continue  # reported by the round-trip and never-raises checks
                for op in got.operations:
                    if op in declared:
                        problems.append(f"{label}: classified as {op!r}, which is declared {declared[op]}")
        _fail(problems[:20], "declared operations classified")

    # -- 2. classification round-trip -----------------------------------------------------

    def test_round_trip(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Each fixture classifies to the operations (and repository) it claims."""
        problems = []
        tracebacks = []
        if not fixtures:
            problems.append("the adapter ships no fixtures")
        for fixture in fixtures:
            for op in fixture.operations:
                if op not in OPERATIONS:
                    problems.append(f"{fixture.id}: claims {op!r}, not in the vocabulary")
            seen = Classified(adapter, fixture.request())
            got = seen.classification
            if got is None:
                problems.append(f"{fixture.id}: {seen.describe()}")
                tracebacks.append(seen.traceback)
                continue
            if Counter(got.operations) != Counter(fixture.operations):
                problems.append(f"{fixture.id}: {seen.describe()}")
            if fixture.repo is not None and got.repo != fixture.repo:
                problems.append(f"{fixture.id}: repository {got.repo!r}, expected {fixture.repo!r}")
        _fail(problems, "round-trip", tracebacks=filter(None, tracebacks))

    def test_near_misses(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Near misses exist and classify to something other than what they resemble."""
        near = [f for f in fixtures if f.near_miss]
        if not near:
            pytest.fail("ship at least one near-miss fixture (a look-alike that is not the operation it resembles)", pytrace=False)

    # -- 3. relay coverage ----------------------------------------------------------------

    def test_relay_coverage(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Every relayed operation is refused with hard_deny and the shared relay line (with the
        adapter's ``relay_hints(operation)`` for a relay command; the built-in ``approval`` relay
        stages the request instead, so its line names no tool to avoid), at every mode.

        A request that also carries an operation the grant denies outright is refused for that
        operation instead: a human's approval covers only relayed operations, so it is never staged."""
        problems = []
        tracebacks = []
        relayed = sorted(op for op in OPERATIONS if DEFAULT_TABLE[op].relay)
        unsupported, pending = _declared(adapter)
        for op in relayed:
            examples = [f for f in fixtures if not f.near_miss and op in f.operations]
            if not examples and op not in unsupported and op not in pending:
                problems.append(f"{op}: relayed by default but no fixture exercises it")
            template = engine.relays[DEFAULT_TABLE[op].relay or ""]
            for fixture in examples:
                for grant in every_grant():
                    decision = engine.decide(fixture.request(), Caller("contract", grant))
                    at = f"at mode {grant_label(grant)}"
                    denied_too = any(
                        not evaluate_operation(other, grant, table=DEFAULT_TABLE).allowed
                        for other in fixture.operations if not DEFAULT_TABLE[other].relay
                    )
                    if decision.action is not Action.DENY or (decision.reason != "hard_deny" and not denied_too):
                        seen = Classified(adapter, fixture.request())
                        problems.append(f"{fixture.id} {at}: {decision.action.value} {decision.reason} ({seen.describe()})")
                        tracebacks.append(seen.traceback)
                    elif decision.reason != "hard_deny":
                        continue  # refused for the other operation, as it must be
                    elif template.usage not in (decision.message or ""):
                        problems.append(f"{fixture.id} {at}: relay line lacks `{template.usage}`: {decision.message}")
                    elif not template.staged:
                        missing = [h for h in adapter.relay_hints(op) if h not in (decision.message or "")]
                        if missing:
                            problems.append(f"{fixture.id} {at}: relay line lacks the hints {missing} of relay_hints({op!r})")
        _fail(problems, "relay coverage", tracebacks=filter(None, tracebacks))

    def test_refusal_body_carries_the_line(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Every refusal body (``refusal_body``) carries the one-line denial, whatever its shape."""
        line = "gitvow refused contract.check (POST /x): the contract kit asks. reason=mode_denied"
        problems = []
        for fixture in fixtures:
            try:
                content_type, body = adapter.refusal_body(fixture.request(), line, "mode_denied")
            except Exception as exc:
                problems.append(f"{fixture.id}: raised {type(exc).__name__}: {exc}")
                continue
            if not isinstance(content_type, str) or not isinstance(body, bytes) or line.encode() not in body:
                problems.append(f"{fixture.id}: {content_type!r} body lacks the line")
        _fail(problems, "refusal bodies")

    # -- 4. fail closed -------------------------------------------------------------------

    def test_fail_closed(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Unparseable, over-limit and unmatched requests are denied at every mode."""
        requests = [(f.id, f.request()) for f in adapter.fail_closed_fixtures()]
        problems = []
        if not requests:
            problems.append("ship fail_closed_fixtures(): unparseable, over-limit and unmatched requests")
        requests.extend(_unmatched_requests(adapter, fixtures))
        for label, request in requests:
            for grant in every_grant():
                decision = engine.decide(request, Caller("contract", grant))
                if decision.action is Action.FORWARD:
                    problems.append(f"{label}: forwarded at mode {grant_label(grant)} (classified {decision.classification})")
                    break
        _fail(problems, "fail closed")

    def test_classify_never_raises(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Odd requests come back as a Classification, never as an exception."""
        problems = []
        tracebacks = []
        for label, request in _odd_requests(adapter, fixtures):
            seen = Classified(adapter, request)
            got = seen.classification
            if got is None or not got.operations:
                problems.append(f"{label}: {seen.describe() if got is None else 'classified as no operation'}")
                tracebacks.append(seen.traceback)
        _fail(problems[:20], "classify raised", tracebacks=filter(None, tracebacks))

    # -- 5. the denial line ---------------------------------------------------------------

    def test_denial_line(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """One line, ``reason=<code>`` at its end, the same code in the header, no query or body."""
        refused: list[tuple[str, Decision]] = []
        low = Caller("contract", Grant(Mode.ADVISORY))
        for fixture in [*adapter.fail_closed_fixtures(), *fixtures]:
            decision = engine.decide(fixture.request(), low)
            if decision.action is Action.DENY:
                refused.append((fixture.id, decision))
        problems = []
        if not refused:
            problems.append("no fixture is refused at advisory, so the denial line cannot be checked")
        for label, decision in refused:
            message = decision.message or ""
            code = decision.reason
            if "\n" in message or "\r" in message:
                problems.append(f"{label}: denial spans several lines")
            if not code or not message.endswith(f"reason={code}"):
                problems.append(f"{label}: line does not end with reason={code}: {message}")
            if decision.headers.get(denial.REASON_HEADER) != code:
                problems.append(f"{label}: header {denial.REASON_HEADER} is {decision.headers.get(denial.REASON_HEADER)!r}")
            if decision.status != 403:
                problems.append(f"{label}: status {decision.status}, expected 403")
            if decision.verdict is not None and decision.verdict.outcome is Outcome.DENY and not decision.verdict.why:
                problems.append(f"{label}: no reason given")
            if "?" in message.split("reason=")[0] and "=" in message.split("?")[-1].split(" ")[0]:
                problems.append(f"{label}: the line quotes a query string")
        _fail(problems, "denial line")

    def test_unknown_is_denied_with_a_code(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """An ``unknown`` classification carries a reason code and a note for the agent."""
        problems = []
        for fixture in [*fixtures, *adapter.fail_closed_fixtures()]:
            got = Classified(adapter, fixture.request()).classification
            if got is not None and UNKNOWN in got.operations and (not got.unknown_code or not got.note):
                problems.append(f"{fixture.id}: unknown without a reason code or note")
        _fail(problems, "unknown without explanation")


def _hosts(adapter: Adapter, fixtures: Sequence[Fixture]) -> list[str]:
    return sorted({_host_key(f.request()) for f in fixtures} | set(adapter.default_hosts))


def _unmatched_requests(adapter: Adapter, fixtures: Sequence[Fixture]) -> list[tuple[str, Request]]:
    """A write to a path no forge has, on every host the adapter serves."""
    return [
        (f"unmatched {method} {host}", Request.from_url(method, f"https://{host}{UNMATCHED_PATH}", body=b"{}"))
        for host in _hosts(adapter, fixtures)
        for method in ("POST", "PUT", "PATCH", "DELETE")
    ]


_ODD_PATHS: tuple[tuple[str, str], ...] = (
    ("GET", "/"), ("POST", "/"), ("POST", "//"), ("PATCH", "/%ff%fe"), ("BREW", "/coffee"),
    ("POST", "/" + "a/" * 500), ("DELETE", "/.git/"), ("POST", "/graphql"), ("POST", "/api/graphql"),
)
_ODD_BODIES: tuple[bytes, ...] = (b"", b"\xff\xfe\x00garbage", b"{", b'{"query": 5}', b"[]", b"0000")


def _odd_requests(adapter: Adapter, fixtures: Sequence[Fixture]) -> list[tuple[str, Request]]:
    """Malformed and unexpected requests on every host the adapter serves."""
    return [
        (f"{method} {host}{path[:40]} body={body[:10]!r}", Request.from_url(method, f"https://{host}{path}", body=body))
        for host in _hosts(adapter, fixtures) or ["example.test"]
        for method, path in _ODD_PATHS
        for body in _ODD_BODIES
    ]


def _probe_requests(adapter: Adapter, fixtures: Sequence[Fixture]) -> list[tuple[str, Request]]:
    """Every request the kit knows for this adapter: fixtures, fail-closed, unmatched and odd ones."""
    known = [(f.id, f.request()) for f in [*fixtures, *adapter.fail_closed_fixtures()]]
    return [*known, *_unmatched_requests(adapter, fixtures), *_odd_requests(adapter, fixtures)]


