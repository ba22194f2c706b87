# exercise: timeseries
# diagnosis: ts_sample_std
import torch


def chronological_split(series, n_train):
    if n_train < 1 or n_train >= len(series):
        raise ValueError("n_train out of range")
    return series[:n_train], series[n_train:]


def fit_standardizer(train):
    n = train.shape[0]
    mean = train.sum(0) / n
    var = ((train - mean) ** 2).sum(0) / (n - 1)
    std = var.sqrt()
    std[std == 0] = 1.0
    return mean, std


def sliding_windows(series, window, horizon):
    N = len(series)
    if window < 1 or horizon < 1 or N - window - horizon + 1 < 1:
        raise ValueError("bad window")
    Xs, ys = [], []
    for i in range(N - window - horizon + 1):
        Xs.append(series[i:i + window])
        ys.append(series[i + window + horizon - 1])
    return torch.stack(Xs), torch.stack(ys)


def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mean, std = fit_standardizer(train)
    Xtr, ytr = sliding_windows((train - mean) / std, window, horizon)
    Xte, yte = sliding_windows((test - mean) / std, window, horizon)
    return Xtr, ytr, Xte, yte, mean, std
