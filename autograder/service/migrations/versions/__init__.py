"""One file per schema change, oldest first."""
