"""Correct, written differently (beginner style): lists of rows, statistics by hand."""
import torch


def chronological_split(series, n_train):
    if n_train < 1 or n_train > len(series) - 1:
        raise ValueError("both periods need at least one step")
    train = torch.stack([series[t] for t in range(n_train)])
    test = torch.stack([series[t] for t in range(n_train, len(series))])
    return train, test


def fit_standardizer(train):
    n = train.shape[0]
    mean = sum(train[t] for t in range(n)) / n
    var = sum((train[t] - mean) ** 2 for t in range(n)) / n
    std = var ** 0.5
    std = std.masked_fill(std == 0, 1.0)
    return mean, std


def sliding_windows(series, window, horizon):
    if window < 1 or horizon < 1:
        raise ValueError("window and horizon must be positive")
    xs, ys = [], []
    i = 0
    while i + window - 1 + horizon < len(series):
        xs.append(series[i:i + window])
        ys.append(series[i + window - 1 + horizon])
        i += 1
    if not xs:
        raise ValueError("series too short for one window")
    return torch.stack(xs), torch.stack(ys)


def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mean, std = fit_standardizer(train)
    X_train, y_train = sliding_windows((train - mean) / std, window, horizon)
    X_test, y_test = sliding_windows((test - mean) / std, window, horizon)
    return X_train, y_train, X_test, y_test, mean, std
