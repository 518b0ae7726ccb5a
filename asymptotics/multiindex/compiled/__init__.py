"""Compiled passes of the several-steps mapping (docs/THEORY.md §12.4): the spike lattice's kept
nodes and its sub-rules' weights without the full grid (``lattice``), the xi-moments' piecewise
Chebyshev series summed straight into their place (``clenshaw``), softplus and its derivative at
an xi rule's pre-activations in one pass (``softplus``)."""
