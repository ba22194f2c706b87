# exercise: positional_encoding
# diagnosis: pe_positions_from_one
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 == 1:
        raise ValueError("d must be even")
    rows = []
    for pos in range(1, T + 1):
        freqs = pos / torch.pow(torch.tensor(float(base), dtype=torch.float64),
                                torch.arange(0, d, 2, dtype=torch.float64) / d)
        rows.append(torch.stack([freqs.sin(), freqs.cos()], dim=1).reshape(-1))
    return torch.stack(rows).float() if rows else torch.zeros(0, d)


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.size(1), X.size(2)).to(dtype=X.dtype, device=X.device)
