"""The Monte Carlo protocol (docs/THEORY.md §1), written once for every experiment: sampling and
the giant step (:mod:`.montecarlo`, with the compiled passes of :mod:`.kernels`), ridge and the
test error (:mod:`.montecarlo`, :mod:`.estimators`), the one-step simulator (:mod:`.simulator`),
the worker pool (:mod:`.pool`) and the CSV row store of the figures' cache (:mod:`.rows`).
Importing the package loads nothing."""
