"""The `masked_loss` exercise: the cross-entropy of the valid tokens only (masked_cross_entropy)."""
