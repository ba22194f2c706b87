"""Correct, written differently: numpy for the statistics, index arithmetic for the windows."""
import numpy as np
import torch


def chronological_split(series, n_train):
    N = series.size(0)
    if not (0 < n_train < N):
        raise ValueError("bad split")
    idx = torch.arange(N)
    return series[idx < n_train], series[idx >= n_train]


def fit_standardizer(train):
    a = train.detach().cpu().numpy().astype(np.float64)
    mean, std = a.mean(axis=0), a.std(axis=0)
    std = np.where(std == 0, 1.0, std)
    return torch.from_numpy(mean).to(train.dtype), torch.from_numpy(std).to(train.dtype)


def sliding_windows(series, window, horizon):
    N = series.size(0)
    if window < 1:
        raise ValueError("window < 1")
    if horizon < 1:
        raise ValueError("horizon < 1")
    M = N - window - horizon + 1
    if M <= 0:
        raise ValueError("too short")
    starts = torch.arange(M)
    idx = starts[:, None] + torch.arange(window)[None, :]  # (M, window)
    return series[idx], series[starts + window - 1 + horizon]


def make_datasets(series, n_train, window, horizon):
    tr, te = chronological_split(series, n_train)
    mean, std = fit_standardizer(tr)
    z = lambda s: (s - mean) / std
    return (*sliding_windows(z(tr), window, horizon), *sliding_windows(z(te), window, horizon), mean, std)
