import os

# before numpy loads OpenBLAS: idle BLAS threads stop spinning
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from .cli import main  # noqa: E402

raise SystemExit(main())
