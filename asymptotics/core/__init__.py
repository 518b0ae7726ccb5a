"""Foundations of the theory package: parameter validators, progress of long work, the one
result record of every route (``result.RiskResult``), where numba caches the kernels (never
inside the installed package). Imports nothing else of the package."""
