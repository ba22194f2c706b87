"""The `recurrent` exercise: LSTM and GRU cells and an LSTM over padded sequences."""
