"""The self-consistent equations (THEORY.md §5) and their solvers: the fixed-point map as numba
kernels, the Python reference solver and the compiled point and path solver; the quadrature
policy of the K-group routes (``ladder``) and their node sums of one or two groups
(``node_sums``)."""
