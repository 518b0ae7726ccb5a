"""Several giant steps (docs/THEORY.md §12): the simulator (:mod:`.simulator`), the group
statistics of a first layer (:mod:`.groups`) and the ``python -m validation multistep`` command
(:mod:`.cli`). Importing the package loads nothing."""
