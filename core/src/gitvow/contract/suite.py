"""The contract checks, written once and inherited by each adapter's test class.

Each check collects every violation before failing, so one run shows an adapter author
everything that is wrong, not the first thing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import pytest

from gitvow import denial
from gitvow.adapter import Adapter
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import CAPABILITIES, Mode
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.policy.table import DEFAULT_TABLE
from gitvow.relay import MERGE, OPEN_PR
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
    plugins = Plugins.of(adapters=[adapter], relays=[OPEN_PR, MERGE])
    return Engine(Policy(hosts=hosts), plugins)


def every_grant() -> Iterator[Grant]:
    """Each mode, with and without every capability."""
    for mode in Mode:
        yield Grant(mode)
        yield Grant(mode, frozenset(CAPABILITIES))


def _fail(problems: list[str], title: str) -> None:
    if problems:
        pytest.fail(f"{title} ({len(problems)}):\n  " + "\n  ".join(problems), pytrace=False)


class AdapterContract:
    """Inherit this and provide an ``adapter`` fixture returning the adapter under test."""

    @pytest.fixture
    def fixtures(self, adapter: Adapter) -> list[Fixture]:
        return list(adapter.fixtures())

    @pytest.fixture
    def engine(self, adapter: Adapter, fixtures: list[Fixture]) -> Engine:
        return engine_for(adapter, [*fixtures, *adapter.fail_closed_fixtures()])

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

    # -- 1. completeness ------------------------------------------------------------------

    def test_completeness(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Every operation has a wire example or an explicit unsupported entry with a reason."""
        examples = [*fixtures, *adapter.fail_closed_fixtures()]
        exemplified = {op for f in examples for op in f.operations}
        unsupported = dict(adapter.unsupported())
        problems = []
        for name in sorted(set(unsupported) - set(OPERATIONS)):
            problems.append(f"unsupported() names {name!r}, which is not in the vocabulary")
        for name, reason in sorted(unsupported.items()):
            if not isinstance(reason, str) or not reason.strip():
                problems.append(f"unsupported {name!r} needs a one-line reason")
            if name in exemplified:
                problems.append(f"{name!r} is both unsupported and has a fixture")
        for name in OPERATIONS:
            if name not in exemplified and name not in unsupported:
                problems.append(f"{name!r}: no fixture and no unsupported() entry")
        _fail(problems, "completeness")

    # -- 2. classification round-trip -----------------------------------------------------

    def test_round_trip(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Each fixture classifies to the operations (and repository) it claims."""
        problems = []
        if not fixtures:
            problems.append("the adapter ships no fixtures")
        for fixture in fixtures:
            for op in fixture.operations:
                if op not in OPERATIONS:
                    problems.append(f"{fixture.id}: claims {op!r}, not in the vocabulary")
            got = adapter.classify(fixture.request())
            if not isinstance(got, Classification):
                problems.append(f"{fixture.id}: classify returned {type(got).__name__}")
                continue
            if Counter(got.operations) != Counter(fixture.operations):
                problems.append(f"{fixture.id}: classified as {','.join(got.operations) or '(nothing)'}")
            if fixture.repo is not None and got.repo != fixture.repo:
                problems.append(f"{fixture.id}: repository {got.repo!r}, expected {fixture.repo!r}")
        _fail(problems, "round-trip")

    def test_near_misses(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Near misses exist and classify to something other than what they resemble."""
        near = [f for f in fixtures if f.near_miss]
        if not near:
            pytest.fail("ship at least one near-miss fixture (a look-alike that is not the operation it resembles)", pytrace=False)

    # -- 3. relay coverage ----------------------------------------------------------------

    def test_relay_coverage(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Every relayed operation is refused with hard_deny and the shared relay line (with the
        adapter's ``relay_hints(operation)``), at every mode."""
        problems = []
        relayed = sorted(op for op in OPERATIONS if DEFAULT_TABLE[op].relay)
        unsupported = adapter.unsupported()
        for op in relayed:
            examples = [f for f in fixtures if not f.near_miss and op in f.operations]
            if not examples and op not in unsupported:
                problems.append(f"{op}: relayed by default but no fixture exercises it")
            for fixture in examples:
                for grant in every_grant():
                    decision = engine.decide(fixture.request(), Caller("contract", grant))
                    template = engine.relays[DEFAULT_TABLE[op].relay or ""]
                    if decision.action is not Action.DENY or decision.reason != "hard_deny":
                        problems.append(f"{fixture.id} at {grant.mode.label}: {decision.action.value} {decision.reason}")
                    elif template.usage not in (decision.message or ""):
                        problems.append(f"{fixture.id}: relay line lacks `{template.usage}`: {decision.message}")
                    else:
                        missing = [h for h in adapter.relay_hints(op) if h not in (decision.message or "")]
                        if missing:
                            problems.append(f"{fixture.id}: relay line lacks the hints {missing} of relay_hints({op!r})")
        _fail(problems, "relay coverage")

    # -- 4. fail closed -------------------------------------------------------------------

    def test_fail_closed(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Unparseable, over-limit and unmatched requests are denied at every mode."""
        requests = [(f.id, f.request()) for f in adapter.fail_closed_fixtures()]
        problems = []
        if not requests:
            problems.append("ship fail_closed_fixtures(): unparseable, over-limit and unmatched requests")
        hosts = {_host_key(f.request()) for f in fixtures} | set(adapter.default_hosts)
        for host in sorted(hosts):
            for method in ("POST", "PUT", "PATCH", "DELETE"):
                requests.append((f"unmatched {method} {host}", Request.from_url(method, f"https://{host}{UNMATCHED_PATH}", body=b"{}")))
        for label, request in requests:
            for grant in every_grant():
                decision = engine.decide(request, Caller("contract", grant))
                if decision.action is Action.FORWARD:
                    problems.append(f"{label}: forwarded at {grant.mode.label} (classified {decision.classification})")
                    break
        _fail(problems, "fail closed")

    def test_classify_never_raises(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Odd requests come back as a Classification, never as an exception."""
        hosts = sorted({_host_key(f.request()) for f in fixtures} | set(adapter.default_hosts)) or ["example.test"]
        odd = [
            ("GET", "/"), ("POST", "/"), ("POST", "//"), ("PATCH", "/%ff%fe"), ("BREW", "/coffee"),
            ("POST", "/" + "a/" * 500), ("DELETE", "/.git/"), ("POST", "/graphql"), ("POST", "/api/graphql"),
        ]
        bodies = [b"", b"\xff\xfe\x00garbage", b"{", b'{"query": 5}', b"[]", b"0000"]
        problems = []
        for host in hosts:
            for method, path in odd:
                for body in bodies:
                    request = Request.from_url(method, f"https://{host}{path}", body=body)
                    try:
                        result = adapter.classify(request)
                    except Exception as exc:
                        problems.append(f"{method} {host}{path[:40]} body={body[:10]!r}: raised {type(exc).__name__}: {exc}")
                        continue
                    if not isinstance(result, Classification) or not result.operations:
                        problems.append(f"{method} {host}{path[:40]}: returned {result!r}")
        _fail(problems[:20], "classify raised")

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
            got = adapter.classify(fixture.request())
            if UNKNOWN in got.operations and (not got.unknown_code or not got.note):
                problems.append(f"{fixture.id}: unknown without a reason code or note")
        _fail(problems, "unknown without explanation")
