"""Monte Carlo ground truth (docs/THEORY.md §1) and theory-vs-simulation comparison.

Importing the package has no side effects. For heavy runs export ``OPENBLAS_THREAD_TIMEOUT=4``
before numpy is loaded (the command lines ``python -m validation`` and
``python -m validation.matrix`` do it for themselves): the simulator interleaves BLAS
products with its own threaded passes, and OpenBLAS worker threads otherwise keep spinning for
~2^28 cycles after each call, on the very cores those passes need (measured: 8% of a d = 2000
repetition).
"""
