"""Foundations of the theory package: parameter validators, progress of long work, where numba
caches the kernels (never inside the installed package). Imports nothing else of the package."""
