"""pytest plugin (entry point ``pytest11``): parametrises ``installed_adapter`` over discovered adapters.

Opt-in by construction: it adds one command-line option and acts only on tests that ask
for the ``installed_adapter`` fixture, so it changes nothing in unrelated projects.
"""

from __future__ import annotations

import pytest

FIXTURE = "installed_adapter"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gitvow", "gitvow contract kit")
    group.addoption(
        "--gitvow-adapter",
        action="append",
        default=[],
        metavar="NAME",
        help="run the contract kit only for this installed adapter (repeatable)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    from gitvow.plugins import installed

    found = installed()
    wanted: list[str] = metafunc.config.getoption("gitvow_adapter")
    names = sorted(found.adapters)
    if wanted:
        missing = sorted(set(wanted) - set(names))
        if missing:
            raise pytest.UsageError(f"--gitvow-adapter: not installed: {', '.join(missing)} (installed: {', '.join(names)})")
        names = [n for n in names if n in wanted]
    metafunc.parametrize(FIXTURE, [found.adapters[n] for n in names], ids=names)
