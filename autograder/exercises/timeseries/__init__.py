"""The `timeseries` exercise: splitting, standardizing and windowing a series without leaking the future."""
