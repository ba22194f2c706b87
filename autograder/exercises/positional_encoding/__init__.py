"""The `positional_encoding` exercise: the sinusoidal encoding and adding it to embeddings."""
