# exercise: timeseries
# diagnosis: correct
import torch


def chronological_split(series, n_train):
    if not (1 <= n_train <= series.shape[0] - 1):
        raise ValueError("n_train out of range")
    return series[:n_train].clone(), series[n_train:].clone()


def fit_standardizer(train):
    mean = train.mean(0)
    std = ((train - mean) ** 2).mean(0).sqrt()
    return mean, torch.where(std == 0, torch.ones_like(std), std)


def sliding_windows(series, window, horizon):
    N = series.shape[0]
    if window < 1 or horizon < 1 or N < window + horizon:
        raise ValueError("bad arguments")
    idx = torch.arange(N - window - horizon + 1)
    X = series[idx[:, None] + torch.arange(window)[None, :]]
    y = series[idx + window - 1 + horizon]
    return X, y


def make_datasets(series, n_train, window, horizon):
    tr, te = chronological_split(series, n_train)
    m, s = fit_standardizer(tr)
    a = sliding_windows((tr - m) / s, window, horizon)
    b = sliding_windows((te - m) / s, window, horizon)
    return a[0], a[1], b[0], b[1], m, s
