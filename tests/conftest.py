import os

_OWN_CACHE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))
os.environ.setdefault("NUMBA_CACHE_DIR", _OWN_CACHE)
# the suite's own cache holds kernels compiled at LLVM's -O1 (numba's NUMBA_OPT; its default is
# 3): the suite's time is mostly compilation on a fresh clone (two of its tests: 303 -> 237 CPU-s)
# and the numbers are the same bits (IEEE arithmetic at either level: 47 numbers of the srf,
# network, rf, K-group and several-steps routes compared; the spectra's outside traces, which
# ask for fastmath, may round their sums otherwise, within the tolerances their tests state);
# a cache the user named may be shared with their own runs, which keep their -O3 kernels
if os.path.realpath(os.environ["NUMBA_CACHE_DIR"]) == _OWN_CACHE:
    os.environ.setdefault("NUMBA_OPT", "1")
# pytest-xdist's workers share one cache: a kernel compiles under its own lock in the queue, so a
# worker that needs a kernel another is compiling waits and then loads it (each signature compiles
# once in a run, not once a worker) while different kernels compile on both cores; every save
# into the cache holds the queue's save lock (numba's on-disk cache has none between processes)
# the suite compiles its kernels in-process (numba's behaviour): no background compiler, the same
# bits in every process; tests/test_coldstart.py covers the interpreted first run
os.environ.setdefault("GIANTSTEP_COLD_START", "compile")
# the network devices are computed in every test process, not read from the user's disk cache
# (tests/test_device_disk.py turns it on in a temporary directory)
os.environ.setdefault("GIANTSTEP_DEVICE_CACHE", "0")
# the processes the tests start (tutorials, commands, documented blocks) inherit one BLAS thread,
# as the suite's own process has (_blas_on_one_thread below; threadpoolctl reaches only this
# process): a tutorial's network bulk on two OpenBLAS threads while the other worker kept the
# second core busy cost 3x the CPU time (24 s against 8 s); a test raises it where it needs more
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from collections import Counter  # noqa: E402

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

#: the test files that take longest, longest first (summed top-80 durations of a cold
#: fresh-cache run of the default suite on two workers): handed out to the workers first, so
#: that none of them starts last while the other worker has nothing left to run (pytest-xdist's
#: own order, most tests first, put the tutorials' eight tests, ~6% of the run, near the end)
LONG_FILES = ["test_tutorials.py", "test_bad_input_beyond.py", "test_api_consistency.py",
              "test_bad_input.py", "test_spiked_theory.py", "test_spectrum_theory.py",
              "test_spectra_netbulk.py", "test_progress_audit.py", "test_report_notes.py",
              "test_network_steps.py", "test_docs_site.py", "test_cli.py", "test_agreement.py",
              "test_silent_numbers.py", "test_readme.py", "test_multistep.py", "test_pool.py",
              "test_coldstart_queue.py", "test_network_complete.py"]


def pytest_collection_modifyitems(config, items):
    """The files in the order the workers get them (``--dist loadfile`` with
    ``--no-loadscope-reorder``): LONG_FILES first, then the rest with the most tests first (what
    pytest-xdist's own reordering does); a file's tests keep their order."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    files = [item.nodeid.split("::")[0] for item in items]
    count = Counter(files)
    first = {f: i for i, f in reversed(list(enumerate(files)))}
    order = sorted(range(len(items)), key=lambda i: (rank.get(files[i].rsplit("/", 1)[-1],
                                                              len(rank)),
                                                     -count[files[i]], first[files[i]], i))
    items[:] = [items[i] for i in order]


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
