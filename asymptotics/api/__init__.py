"""The public theory entry points: risk, risk_curve, risk_grid and the optimal lam / eta_tilde
searches, on the compiled path solver (THEORY.md §5-§7), each point a
``asymptotics.core.result.RiskResult`` (re-exported here)."""
