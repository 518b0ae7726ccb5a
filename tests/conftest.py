import os

os.environ.setdefault("NUMBA_CACHE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))
# the suite compiles its kernels in-process (numba's behaviour): no background compiler, the same
# bits in every process; tests/test_coldstart.py covers the interpreted first run
os.environ.setdefault("GIANTSTEP_COLD_START", "compile")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _progress_not_left_quiet():
    """A command's ``--quiet`` run in-process silences the process's progress reports
    (:func:`asymptotics.core.progress.set_quiet`): no test leaves that to the next."""
    yield
    from asymptotics.core.progress import set_quiet

    set_quiet(False)
