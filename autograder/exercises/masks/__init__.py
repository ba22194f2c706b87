"""The `masks` exercise: padding, causal and attention masks."""
