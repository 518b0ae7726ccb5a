import os

os.environ.setdefault("NUMBA_CACHE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))
# the suite compiles its kernels in-process (numba's behaviour): no background compiler, the same
# bits in every process; tests/test_coldstart.py covers the interpreted first run
os.environ.setdefault("GIANTSTEP_COLD_START", "compile")
