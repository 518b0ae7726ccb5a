"""The validation matrix (docs/THEORY.md §1): its campaign (:mod:`.campaign`, sRF repetitions on
the campaign runner), its report (:mod:`.report`, ``validation/REPORT.md``) and its command line
(:mod:`.cli`, ``python -m validation.matrix {run,report}``). Importing the package loads nothing."""
