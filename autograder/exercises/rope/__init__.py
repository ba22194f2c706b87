"""The `rope` exercise: rotary position embedding (rope_angles, apply_rope)."""
