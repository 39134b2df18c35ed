"""Runs pytest for one ctest entry and says plainly why it did not run.

    PYTHON tests/pytest_ctest.py [--skip-code N] PYTEST_ARGS...

Exit status: pytest's, except 1 with one clear line when this Python cannot
import torch (or pytest), or when nothing was collected (a registered test
that no longer exists); and N (ctest's SKIP_RETURN_CODE) when every test
collected was skipped, with the skip reasons printed.
"""
import sys


def main(argv):
    skip_code = None
    if argv[:1] == ["--skip-code"]:
        skip_code, argv = int(argv[1]), argv[2:]
    for module, package in (("torch", "python3-torch"), ("pytest", "python3-pytest")):
        try:
            __import__(module)
        except Exception as e:  # noqa: BLE001 - any failure to import is the message
            print(f"kopt: the Python at {sys.executable} cannot import {module} ({type(e).__name__}: {e}); "
                  f"the Python tests need it: install {package} (scripts/setup) or configure with "
                  f"-DKOPT_TEST_PYTHON=/path/to/a/python-with-{module}", file=sys.stderr)
            return 1
    import pytest

    class Tally:
        def __init__(self):
            self.ran = 0
            self.skipped = []

        def pytest_runtest_logreport(self, report):
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                self.skipped.append(f"{report.nodeid}: {reason}")
            elif report.when == "call":
                self.ran += 1

    tally = Tally()
    rc = int(pytest.main(["-q", "-rs", "-p", "no:cacheprovider"] + argv, plugins=[tally]))
    if rc == 5:  # pytest.ExitCode.NO_TESTS_COLLECTED
        print(f"kopt: pytest collected no test from {' '.join(argv)}: the ctest registration "
              "(cmake/KoptPythonTests.cmake) names a test that does not exist", file=sys.stderr)
        return 1
    if rc == 0 and tally.ran == 0 and tally.skipped and skip_code is not None:
        for s in tally.skipped:
            print(f"skipped {s}")
        return skip_code
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
