"""Compiled passes of the network route beyond one step (docs/THEORY.md §15): the groups' bulk
outside E where every group is in the base class (its W diagonal per direction), the coupling's
Gram and field parts and the bulk's derivative matrix there, a point's completion and residual
check there, W's readings with one group outside the base class, and the Anderson driver of
the bulk's Python map."""
