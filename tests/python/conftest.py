# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest's outcomes (of it_test_*.py) as the lines tests/python/integration.sh turns into TAP.

One line per test, named by its docstring's first line with the test's
parameters filled in ("{cls}"): ``PYOK NAME`` when it passed, ``PYFAIL
NAME: WHY`` when its set-up, call or tear-down failed (pytest's report
above it says where). A skip is a failure here: nothing in the test bed
may be skipped silently.
"""

from __future__ import annotations

from typing import Dict

import pytest

MARKERS = {
    "root": "runs as root",
    "tester_denied": "runs as the plain user tester without a polkit grant",
    "tester": "runs as tester with org.sandboxd1.create-worker",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, what in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def check_name(item: pytest.Item) -> str:
    doc = (getattr(item, "function", None).__doc__ or "").strip().splitlines()  # type: ignore[union-attr]
    if not doc:
        return item.nodeid
    params: Dict[str, object] = dict(getattr(item, "callspec", None).params) if hasattr(item, "callspec") else {}
    if "worker" in params:
        params["cls"] = params["worker"]
    return doc[0].format(**params)


_failed: Dict[str, str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    outcome = yield
    # Only the test bed's module: the unit tests beside it keep pytest's own output.
    if not item.path.name.startswith("it_test_"):
        return
    report = outcome.get_result()
    name = check_name(item)
    if report.failed or report.skipped:
        why = report.longrepr.reprcrash.message if hasattr(report.longrepr, "reprcrash") else str(report.longrepr)
        _failed.setdefault(name, f"{report.when} {report.outcome}: {why}".replace("\n", " "))
    if report.when == "teardown":
        if name in _failed:
            print(f"\nPYFAIL {name}: {_failed.pop(name)}", flush=True)
        else:
            print(f"\nPYOK {name}", flush=True)
