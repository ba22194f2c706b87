"""The `ablation` exercise: a one-factor ablation experiment (make_ablation, run_ablation)."""
