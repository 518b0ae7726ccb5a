"""Monte Carlo ground truth (THEORY.md §1) and theory-vs-simulation comparison.

Importing the package before numpy sets ``OPENBLAS_THREAD_TIMEOUT=4`` unless it is set: the
simulator interleaves BLAS products with its own threaded passes (parallel random blocks, fused
kernels), and OpenBLAS worker threads otherwise keep spinning for ~2^28 cycles after each call,
on the very cores those passes need (measured: 8% of a d = 2000 repetition). Exported by hand,
the variable does the same for scripts that import numpy first.
"""

import os as _os

_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
