"""attention_ref against Hugging Face transformers: ``nox -s interop`` runs these tests.

Each test module imports transformers with ``pytest.importorskip``: a plain
``pytest tests/interop`` without it skips them, and says so (``-ra``). The ``interop`` session
installs transformers and sets ``ATTENTION_REF_INTEROP=1``; there a skipped test or module is
a failure, so a missing or renamed Hugging Face module cannot pass for a passing suite. The
plain ``pytest`` run (the ``tests`` session) leaves this folder out (``--ignore`` in
pyproject.toml).
"""

import os

import pytest

REQUIRED = os.environ.get("ATTENTION_REF_INTEROP") == "1"


def _fail_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    """Turn a skip into a failure that says what was skipped and why."""
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"skipped in the interop session, which must run every test: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if REQUIRED and report.skipped:
        _fail_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if REQUIRED and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report)
    return report
