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
from gitvow.contract.attacks import (
    READ_METHODS,
    Inventory,
    bad_bodies,
    loopback_fetch,
    repository_prefix,
    through_core,
    under,
    variants,
)
from gitvow.evaluator import Grant, evaluate_operation
from gitvow.gates import Caller
from gitvow.modes import CAPABILITIES, Mode
from gitvow.paths import PATH_NOT_CANONICAL
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy
from gitvow.policy.table import DEFAULT_TABLE
from gitvow.relay import APPROVAL, RelayTemplate
from gitvow.request import NO_REPO, Classification, Fixture, Request
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
    """What ``adapter.classify`` gave for one request: a result, or the exception it raised.

    The request reaches the adapter as the pipeline hands it over: with its canonical path
    (a path the core refuses never reaches the adapter, and is reported as that refusal)."""

    __slots__ = ("error", "result", "traceback")

    def __init__(self, adapter: Adapter, request: Request) -> None:
        self.result: object = None
        self.error: Exception | None = None
        self.traceback = ""
        canonical = through_core(request, encoded_slash=adapter.encoded_slash)
        if canonical is None:
            self.result = Classification.unknown("refused by the core before the adapter", code=PATH_NOT_CANONICAL)
            return
        try:
            self.result = adapter.classify(canonical)
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
    def mapped_hosts(self) -> Sequence[str]:
        """Hosts a policy maps to this adapter in ``[hosts]`` (a self-hosted instance the
        fixtures use), beyond ``default_hosts``. Override it when your fixtures need one."""
        return ()

    @pytest.fixture
    def inventory(self) -> Inventory | None:
        """What the forge exposes (:class:`gitvow.contract.Inventory`), for ``test_inventory``;
        None (the default) skips that check. The shipped adapters derive theirs from the forge."""
        return None

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
            if fixture.repo == NO_REPO:
                if got.repos or got.targets:
                    problems.append(f"{fixture.id}: names {list(got.repos) or list(got.targets)}, expected no repository")
            elif fixture.repo is not None and got.repo != fixture.repo:
                problems.append(f"{fixture.id}: repository {got.repo!r}, expected {fixture.repo!r}")
        _fail(problems, "round-trip", tracebacks=filter(None, tracebacks))

    def test_changes(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Every fixture of an operation that moves a ref or changes content
        (:data:`gitvow.change.CHANGING_OPERATIONS`: ``git.push``, ``ref.*``, ``contents.write``)
        carries a :class:`~gitvow.change.Change` (what it changes, or why that could not be
        established): without one the pipeline refuses it (``change_unestablished``) on every
        transport. A fixture whose change deletes a ref classifies as ``ref.delete`` too."""
        from gitvow.change import needs_change

        problems = []
        for fixture in [*fixtures, *adapter.fail_closed_fixtures()]:
            got = Classified(adapter, fixture.request()).classification
            if got is None:
                continue  # reported by the round trip
            operation = needs_change(got.operations)
            if operation is not None and got.change is None:
                problems.append(f"{fixture.id}: classified as {operation} but carries no change (Classification.change "
                                "is None: the refs it moves and the paths it writes are missing), so the pipeline "
                                "refuses it with change_unestablished")
            elif got.change is not None:
                missing = [op for op in got.change.operations() if op not in got.operations]
                if missing:
                    problems.append(f"{fixture.id}: its change {'deletes' if 'ref.delete' in missing else 'forces'} a "
                                    f"ref but it is not classified as {', '.join(missing)}")
        _fail(problems, "changes")

    def test_near_misses(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Near misses exist, and each classifies differently from the route it sits beside (the
        fixtures on its host whose paths share the most leading segments with it: a near miss
        classified exactly as all of them is not told apart from them)."""
        near = [f for f in fixtures if f.near_miss]
        if not near:
            pytest.fail("ship at least one near-miss fixture (a look-alike that is not the operation it resembles)", pytrace=False)
        problems = []
        others = [f for f in fixtures if not f.near_miss]
        for fixture in near:
            beside = _neighbours(fixture, others)
            if not beside:
                continue  # alone on its route (a GraphQL endpoint): its operations are the round trip's
            mine = engine.classify(fixture.request())[1]
            theirs = [engine.classify(f.request())[1] for f in beside]
            if mine is not None and all(t is not None and Counter(t.operations) == Counter(mine.operations)
                                        for t in theirs):
                problems.append(f"{fixture.id}: classifies as {','.join(mine.operations)}, exactly as the route(s) "
                                f"beside it ({'; '.join(f.id for f in beside[:3])}): a near miss must classify "
                                "differently")
        _fail(problems, "near misses")

    # -- 2b. the adapter attacked around its fixtures -------------------------------------

    def test_variants(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Each fixture respelled (a segment's letter percent-encoded, the path upper-cased, a
        trailing slash, a ``.`` segment) classifies to the same operations and repository
        through the core, or is refused: never to something else. (An upper-cased read may lose
        its repository: forges that route case-sensitively never serve it.)"""
        problems = []
        for fixture in fixtures:
            original = engine.classify(fixture.request())[1]
            if original is None or original.is_unknown:
                continue
            for label, request in variants(fixture.request()):
                got = engine.classify(request)[1]
                if got is None or got.is_unknown:
                    continue
                same_repos = sorted(r.lower() for r in got.repos) == sorted(r.lower() for r in original.repos) or (
                    label == "upper-case" and got.operations == original.operations == ("read",))
                if Counter(got.operations) != Counter(original.operations) or not same_repos:
                    problems.append(f"{fixture.id}, {label} ({request.method} {request.path[:80]}): classified as "
                                    f"{','.join(got.operations)} on {list(got.repos)}, the original as "
                                    f"{','.join(original.operations)} on {list(original.repos)}")
        _fail(problems[:30], "respelled requests")

    def test_bodies(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Each of the adapter's own write routes, sent malformed, over-limit and wrongly-typed
        bodies, never raises; an unreadable body (truncated, not UTF-8, nested past the
        parser's stack, over the limit, its own fields wrongly typed) comes back ``unknown`` or
        as (at least) what the route is."""
        problems: list[str] = []
        tracebacks: list[str] = []
        for fixture in fixtures:
            if fixture.near_miss or fixture.method in READ_METHODS or fixture.operations == (UNKNOWN,):
                continue
            for label, request, strict in bad_bodies(fixture):
                seen = Classified(adapter, request)
                got = seen.classification
                if got is None or not got.operations:
                    problems.append(f"{fixture.id} with {label}: {seen.describe() if got is None else 'no operation'}")
                    tracebacks.append(seen.traceback)
                elif strict and not got.is_unknown and not set(fixture.operations) <= set(got.operations):
                    problems.append(f"{fixture.id} with {label}: {seen.describe()}, neither unknown nor "
                                    f"{','.join(fixture.operations)}")
        _fail(problems[:30], "bodies", tracebacks=filter(None, tracebacks))

    def test_repositories(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """Every request under a repository's path names that repository, reads included (so
        ``[proxy] allowed_repos`` limits them): each fixture under a path where another fixture
        spells its repository, and a GET of every such fixture's URL. A fixture whose ``repo``
        is ``NO_REPO`` must name none (checked by the round trip)."""
        if not adapter.has_repositories:
            return
        prefixes: dict[tuple[str, tuple[str, ...]], str] = {}
        for fixture in fixtures:
            if fixture.repo and not fixture.near_miss:
                request = fixture.request()
                prefix = repository_prefix(request, fixture.repo)
                if prefix is not None:
                    prefixes.setdefault((_host_key(request), prefix), fixture.repo)
        requests = [(f.id, f.request()) for f in fixtures]
        requests += [(f"GET {f.url}", Request.from_url("GET", f.url)) for f in fixtures
                     if f.method not in READ_METHODS and f.repo]
        problems = []
        for label, request in requests:
            for (host, prefix), repo in prefixes.items():
                if host != _host_key(request) or not _at_or_under(request, prefix):
                    continue
                got = engine.classify(request)[1]
                if got is None or got.is_unknown or got.targets:
                    break
                if repo.lower() not in (r.lower() for r in got.repos):
                    problems.append(f"{label}: under {'/'.join(prefix)}, classified as {','.join(got.operations)} "
                                    f"naming {list(got.repos) or 'no repository'}; expected {repo!r}")
                break
        _fail(problems[:30], "repositories")

    def test_hosts(self, adapter: Adapter, fixtures: list[Fixture], mapped_hosts: Sequence[str]) -> None:
        """Every host a fixture uses is served: in ``default_hosts``, or a self-hosted instance's
        a policy maps (``example_hosts``, or the test's ``mapped_hosts``). A host dropped from
        ``default_hosts`` would be tunnelled untouched."""
        declared = set(adapter.default_hosts) | set(adapter.example_hosts) | set(mapped_hosts)
        used: dict[str, int] = {}
        for fixture in [*fixtures, *adapter.fail_closed_fixtures()]:
            host = _host_key(fixture.request())
            used[host] = used.get(host, 0) + 1
        problems = [f"{host}: used by {n} fixture(s) but neither in default_hosts {sorted(adapter.default_hosts)} nor "
                    "in example_hosts nor in mapped_hosts (a self-hosted instance's, which a policy maps)"
                    for host, n in sorted(used.items()) if host not in declared]
        _fail(problems, "hosts")

    def test_credentials_and_resolve(self, adapter: Adapter, fixtures: list[Fixture], engine: Engine) -> None:
        """``credential_headers`` carries the token (as is, or inside Basic) in single-line
        headers for every fixture; ``resolve`` is asked about every target the fixtures carry,
        against a loopback stand-in that answers 404 and then garbage, and settles none of them
        to a repository (what the forge did not say plainly stays unresolved)."""
        from gitvow.testing import RecordingServer

        problems: list[str] = []
        tracebacks: list[str] = []
        for fixture in [*fixtures, *adapter.fail_closed_fixtures()]:
            problems.extend(_credential_problems(adapter, fixture))
        targeted = []
        for fixture in fixtures:
            got = engine.classify(fixture.request())[1]
            if got is not None and got.targets:
                targeted.append((fixture, got))
        for status, body in ((404, b'{"message": "Not Found"}'), (200, b"<html>not what you asked</html>")):
            with RecordingServer((status, {"Content-Type": "application/json"}, body)) as standin:
                for fixture, got in targeted:
                    headers = dict(adapter.credential_headers(fixture.request(), _TOKEN))
                    try:
                        answers = adapter.resolve(got.targets, loopback_fetch(standin.port, headers))
                    except Exception as exc:  # raising is answering nothing: allowed, never trusted
                        tracebacks.append(_traceback(exc))
                        continue
                    settled = {t.value: a.repo for t, a in answers.items() if a.repo is not None}
                    if settled:
                        problems.append(f"{fixture.id}: resolve() settled {settled} though the forge answered {status} "
                                        f"{body[:30]!r}")
        _fail(problems[:30], "credentials and targets")

    def test_inventory(self, adapter: Adapter, fixtures: list[Fixture], inventory: Inventory | None,
                       engine: Engine) -> None:
        """Where a forge inventory is supplied, every write route of it has a fixture (same
        method, a path the template matches) or a declared reason, and every read route
        classifies as ``read``: a route forgotten in the adapter's table fails here even when
        other fixtures of its operation remain."""
        if inventory is None:
            pytest.skip("no inventory supplied (override the `inventory` fixture)")
        problems = []
        examples = [f.request() for f in [*fixtures, *adapter.fail_closed_fixtures()]]
        for method, url in inventory.routes:
            if (method, url) in inventory.reasons:
                continue
            if method in READ_METHODS:
                got = engine.classify(_instantiate(method, url, inventory))[1]
                if got is None or got.operations != ("read",):
                    problems.append(f"{method} {url}: a read classified as {got and ','.join(got.operations)}")
                continue
            if not any(_exemplifies(request, method, url) for request in examples):
                problems.append(f"{method} {url}: no fixture and no declared reason")
        _fail(problems[:40] + ([f"... and {len(problems) - 40} more"] if len(problems) > 40 else []), "inventory")

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
                    problem, trace = _relay_problem(adapter, engine, fixture, grant, op, template)
                    if problem:
                        problems.append(problem)
                        tracebacks.append(trace)
        _fail(problems, "relay coverage", tracebacks=filter(None, tracebacks))

    def test_refusal_body_carries_the_line(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """Every refusal body (``refusal_body``) and every whole refusal (``refusal_answer``)
        carries the one-line denial, whatever its shape; an answer's own status is an HTTP status."""
        line = "gitvow refused contract.check (POST /x): the contract kit asks. reason=mode_denied"
        problems = []
        for fixture in fixtures:
            try:
                content_type, body = adapter.refusal_body(fixture.request(), line, "mode_denied")
                answer = adapter.refusal_answer(fixture.request(), line, "mode_denied", 403)
            except Exception as exc:
                problems.append(f"{fixture.id}: raised {type(exc).__name__}: {exc}")
                continue
            if not isinstance(content_type, str) or not isinstance(body, bytes) or line.encode() not in body:
                problems.append(f"{fixture.id}: {content_type!r} body lacks the line")
            if not isinstance(answer.content_type, str) or not isinstance(answer.body, bytes) \
                    or line.encode() not in answer.body:
                problems.append(f"{fixture.id}: refusal_answer {answer.content_type!r} body lacks the line")
            if answer.status is not None and not (isinstance(answer.status, int) and 100 <= answer.status <= 599):
                problems.append(f"{fixture.id}: refusal_answer status {answer.status!r} is not an HTTP status")
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

    def test_approval_context(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        """An adapter whose fixtures stage ``pr.merge`` or ``pr.create`` reads the forge's
        context and pins a merge, or says why not (``approval_unsupported()``); read from its
        ``approval_fixtures()`` (the forge's answers, recorded), the context has the right types
        and values, its JSON form reads back the same, a forge answering 404 is a
        ``ContextError``, and a pin carries the head, keeps one already set and changes no
        classification (:mod:`gitvow.contract.approvals`)."""
        from gitvow.contract.approvals import approval_problems

        problems, tracebacks = approval_problems(adapter, fixtures)
        _fail(problems, "approval context and pin", tracebacks=tracebacks)

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




_TOKEN = "gitvow-contract-token-0123456789"


def _credential_problems(adapter: Adapter, fixture: Fixture) -> list[str]:
    import base64
    import binascii
    import contextlib

    try:
        headers = adapter.credential_headers(fixture.request(), _TOKEN)
    except Exception as exc:
        return [f"{fixture.id}: credential_headers raised {type(exc).__name__}: {exc}"]
    carried = False
    problems = []
    for name, value in dict(headers).items():
        if not isinstance(name, str) or not isinstance(value, str) or name != name.lower():
            problems.append(f"{fixture.id}: credential header {name!r} must be a lower-case name with a text value")
            continue
        if "\n" in value or "\r" in value:
            problems.append(f"{fixture.id}: credential header {name!r} spans lines")
        if _TOKEN in value:
            carried = True
        elif value.lower().startswith("basic "):
            with contextlib.suppress(binascii.Error, ValueError):
                carried = carried or _TOKEN in base64.b64decode(value[6:]).decode("utf-8", "replace")
    if not carried and not problems and not (headers == {} and fixture.operations == ("auth.login",)):
        # (a sign-in exchange may carry the agent's own flow and no injected credential)
        problems.append(f"{fixture.id}: the token reaches the forge in no header ({sorted(dict(headers))})")
    return problems


def _neighbours(fixture: Fixture, others: Sequence[Fixture]) -> list[Fixture]:
    """The fixtures on the same host, of another route (method, path or query), whose paths
    share the most leading segments with ``fixture``'s."""
    request = fixture.request()
    mine = request.path.strip("/").split("/")
    best = -1
    found: list[Fixture] = []
    for other in others:
        theirs = other.request()
        if _host_key(theirs) != _host_key(request) or (theirs.method, theirs.path, theirs.query) == (
                request.method, request.path, request.query):
            continue  # the same request with another body is not the route beside it
        shared = 0
        for a, b in zip(mine, theirs.path.strip("/").split("/"), strict=False):
            if a != b:
                break
            shared += 1
        if shared > best:
            best, found = shared, [other]
        elif shared == best:
            found.append(other)
    return found


def _at_or_under(request: Request, prefix: tuple[str, ...]) -> bool:
    from gitvow.paths import PathRefused, split_path

    try:
        segments = tuple(s.lower() for s in split_path(request.path))
    except PathRefused:
        return False
    return segments == prefix or under(request, prefix)


def _template_segments(url: str) -> tuple[str, list[str]]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return host, [s for s in parts.path.split("/") if s]


def _is_param(segment: str) -> bool:
    return segment.startswith(":") or ("{" in segment and "}" in segment)


def _exemplifies(request: Request, method: str, url: str) -> bool:
    """Whether ``request`` is an instance of the inventory route (a ``{x*}``/last parameter may span)."""
    if request.method != method:
        return False
    host, template = _template_segments(url)
    if host != _host_key(request):
        return False
    segments = [s for s in request.path.split("/") if s]
    if len(segments) != len(template):
        spans = template and _is_param(template[-1]) and len(segments) > len(template)
        if not spans:
            return False
        segments = [*segments[: len(template) - 1], "/".join(segments[len(template) - 1:])]
    return all(_is_param(t) or t == s for t, s in zip(template, segments, strict=True))


def _instantiate(method: str, url: str, inventory: Inventory) -> Request:
    import re

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return inventory.sample.get(name, f"{name}-1")

    return Request.from_url(method, re.sub(r"\{([^}/]+)\}|:([A-Za-z_]\w*)", fill, url))


def _relay_problem(adapter: Adapter, engine: Engine, fixture: Fixture, grant: Grant, op: str,
                   template: RelayTemplate) -> tuple[str, str | None]:
    """What is wrong with the refusal of one relayed fixture at one grant ("" when nothing),
    and the classification's traceback when the adapter is to blame."""
    decision = engine.decide(fixture.request(), Caller("contract", grant))
    at = f"at mode {grant_label(grant)}"
    denied_too = any(
        not evaluate_operation(other, grant, table=DEFAULT_TABLE).allowed
        for other in fixture.operations if not DEFAULT_TABLE[other].relay
    )
    if decision.action is not Action.DENY or (decision.reason != "hard_deny" and not denied_too):
        seen = Classified(adapter, fixture.request())
        return f"{fixture.id} {at}: {decision.action.value} {decision.reason} ({seen.describe()})", seen.traceback
    if decision.reason != "hard_deny":
        return "", None  # refused for the other operation, as it must be
    if template.usage not in (decision.message or ""):
        return f"{fixture.id} {at}: relay line lacks `{template.usage}`: {decision.message}", None
    if not template.staged:
        missing = [h for h in adapter.relay_hints(op) if h not in (decision.message or "")]
        if missing:
            return f"{fixture.id} {at}: relay line lacks the hints {missing} of relay_hints({op!r})", None
    return "", None
