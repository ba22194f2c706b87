"""The `attention` exercise: scaled_dot_product_attention and MultiHeadAttention."""
