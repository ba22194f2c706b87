"""Correct, written differently: torch.var_mean, a python loop of windows built into preallocated tensors."""
import torch


def chronological_split(series, n_train):
    if not isinstance(n_train, int) or not 1 <= n_train <= series.shape[0] - 1:
        raise ValueError("n_train out of range")
    train, test = torch.split(series, [n_train, series.shape[0] - n_train])
    return train, test


def fit_standardizer(train):
    var, mean = torch.var_mean(train, dim=0, unbiased=False)
    std = var.sqrt()
    return mean, torch.where(std > 0, std, torch.ones_like(std))


def sliding_windows(series, window, horizon):
    N, F = series.shape
    M = N - window - horizon + 1
    if window < 1 or horizon < 1 or M < 1:
        raise ValueError("window < 1, horizon < 1 or series too short")
    X = torch.empty(M, window, F, dtype=series.dtype)
    y = torch.empty(M, F, dtype=series.dtype)
    for i in range(M):
        X[i] = series[i:i + window]
        y[i] = series[i + window + horizon - 1]
    return X, y


def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mean, std = fit_standardizer(train)
    train_z = (train - mean) / std
    test_z = (test - mean) / std
    X_train, y_train = sliding_windows(train_z, window, horizon)
    X_test, y_test = sliding_windows(test_z, window, horizon)
    return X_train, y_train, X_test, y_test, mean, std
