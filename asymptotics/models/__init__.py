"""A model assembled for the solver: Problem and build_problem (rf, srf, network; finite width),
with the limits and bounds of THEORY.md §7 and an independent eta = 0 formula."""
