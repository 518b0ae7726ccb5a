"""The public theory entry points: risk, risk_curve, risk_grid, the optimal lam / eta_tilde
searches and RiskResult, on the compiled path solver (THEORY.md §5-§7)."""
