"""Each contract check can fail: the kit, run on a deliberately broken adapter, catches it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("broken_adapters", HERE / "broken_adapters.py")
assert _spec is not None and _spec.loader is not None
broken = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broken)

SUITE = """
import pytest
from gitvow.contract import AdapterContract
from broken_adapters import {name}

class TestVariant(AdapterContract):
    @pytest.fixture
    def adapter(self):
        return {name}()
"""


@pytest.mark.parametrize("variant", sorted(broken.EXPECTED_FAILURES))
def test_kit_fails_exactly_the_broken_check(pytester: pytest.Pytester, variant: str) -> None:
    pytester.syspathinsert(HERE)
    pytester.makepyfile(SUITE.format(name=variant))
    recorder = pytester.inline_run("-p", "no:cacheprovider")
    passed, _skipped, failed = recorder.listoutcomes()
    failed_checks = {report.nodeid.rsplit("::", 1)[-1] for report in failed}
    assert failed_checks == broken.EXPECTED_FAILURES[variant]
    assert passed, "the other checks must still run and pass"
