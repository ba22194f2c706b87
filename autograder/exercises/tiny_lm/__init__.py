"""The `tiny_lm` exercise: a tiny causal language model built from the student's own parts."""
