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
from gitvow.plugins import Plugins
import broken_adapters
from broken_adapters import {name}

class TestVariant(AdapterContract):
    @pytest.fixture
    def adapter(self):
        return {name}()

    @pytest.fixture
    def inventory(self):
        return broken_adapters.INVENTORY

    @pytest.fixture
    def registry(self, adapter):
        # Stands in for the installed plugins; the real entry-point path is proven by
        # test_plugin_guide.py, which installs a plugin built from the guide.
        return Plugins.of(adapters=broken_adapters.REGISTERED.get("{name}", [adapter]), plugin="toy")
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


def _run(pytester: pytest.Pytester, variant: str) -> str:
    pytester.syspathinsert(HERE)
    pytester.makepyfile(SUITE.format(name=variant))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    return result.stdout.str()


def test_a_relay_failure_names_the_mode(pytester: pytest.Pytester) -> None:
    out = _run(pytester, "UnrelayedMerge")
    assert "pulls/1/merge -> pr.merge at mode issues_prs_merge+converse: forward" in out
    assert "at mode advisory: deny mode_denied (classified as pr.edit)" in out


def test_a_raising_adapter_shows_its_traceback(pytester: pytest.Pytester) -> None:
    out = _run(pytester, "Raises")
    assert "raised RuntimeError: boom" in out
    assert "the adapter raised:" in out
    # the adapter's own frame, not only the kit's
    assert 'broken_adapters.py", line' in out and 'raise RuntimeError("boom")' in out


def test_a_relay_failure_shows_the_adapters_traceback(pytester: pytest.Pytester) -> None:
    out = _run(pytester, "RaisesOnMerge")
    assert "pr.merge at mode issues_prs_merge: deny internal_error (raised KeyError: 'merge_method')" in out
    assert 'raise KeyError("merge_method")' in out


def test_a_missing_change_names_the_fixture_the_operation_and_the_field(pytester: pytest.Pytester) -> None:
    out = _run(pytester, "ForgetsTheChange")
    assert ("DELETE https://toy.example.test/repos/o/r/branches/topic -> ref.write,ref.delete: classified as "
            "ref.write but carries no change (Classification.change is None: the refs it moves and the paths it "
            "writes are missing), so the pipeline refuses it with change_unestablished") in out


def test_a_deletion_must_classify_as_ref_delete(pytester: pytest.Pytester) -> None:
    out = _run(pytester, "DeletionAsWrite")
    assert ("DELETE https://toy.example.test/repos/o/r/branches/topic -> ref.write,ref.delete: its change deletes a "
            "ref but it is not classified as ref.delete") in out
