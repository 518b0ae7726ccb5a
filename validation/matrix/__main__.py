"""``python -m validation.matrix {run,report}``: the command line of
:mod:`validation.matrix.cli`."""
import os

# before numpy loads OpenBLAS: idle BLAS threads stop spinning (validation/__init__.py)
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from .cli import main  # noqa: E402

raise SystemExit(main())
