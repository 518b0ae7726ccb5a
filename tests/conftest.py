import os

os.environ.setdefault("NUMBA_CACHE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))
# pytest-xdist's workers share one cache: a kernel compiles under the queue's lock (numba's
# on-disk cache has none between processes), so a worker that needs a kernel another is compiling
# waits and then loads it; each signature compiles once in a run, not once a worker
# the suite compiles its kernels in-process (numba's behaviour): no background compiler, the same
# bits in every process; tests/test_coldstart.py covers the interpreted first run
os.environ.setdefault("GIANTSTEP_COLD_START", "compile")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _blas_on_one_thread():
    """The suite runs BLAS on one thread: on a 2-core machine with another process busy, an
    OpenBLAS of two threads made a 400 x 400 eigh 10-50x slower in CPU and wall time (the
    suite's own cost; the package's routes set their own limits, tested with
    :func:`blas_two_threads`)."""
    with threadpool_limits(1, user_api="blas"):
        yield


@pytest.fixture
def blas_two_threads():
    """BLAS back on two threads for one test (a test of a route's own thread limit)."""
    with threadpool_limits(2, user_api="blas"):
        yield


@pytest.fixture(autouse=True)
def _progress_not_left_quiet():
    """A command's ``--quiet`` run in-process silences the process's progress reports
    (:func:`asymptotics.core.progress.set_quiet`): no test leaves that to the next."""
    yield
    from asymptotics.core.progress import set_quiet

    set_quiet(False)
