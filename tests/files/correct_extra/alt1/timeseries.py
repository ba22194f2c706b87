"""Correct, written differently: unfold for the windows, var().sqrt() for the std, explicit masks."""
import torch


def chronological_split(series, n_train):
    if n_train <= 0 or n_train >= len(series):
        raise ValueError(f"n_train={n_train} leaves an empty period")
    return series[:n_train].clone(), series[n_train:].clone()


def fit_standardizer(train):
    mean = train.sum(0) / train.shape[0]
    std = ((train - mean) ** 2).mean(0).sqrt()
    std[std == 0] = 1.0
    return mean, std


def sliding_windows(series, window, horizon):
    if min(window, horizon) < 1 or series.shape[0] < window + horizon:
        raise ValueError("no window")
    inputs = series[:-horizon].unfold(0, window, 1).transpose(1, 2)  # (M, window, F)
    targets = series[window - 1 + horizon:]
    return inputs.contiguous(), targets


def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mu, sigma = fit_standardizer(train)
    Xa, ya = sliding_windows((train - mu) / sigma, window, horizon)
    Xb, yb = sliding_windows((test - mu) / sigma, window, horizon)
    return Xa, ya, Xb, yb, mu, sigma
