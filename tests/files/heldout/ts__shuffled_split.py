# exercise: timeseries
# diagnosis: ts_random_split
import torch


def chronological_split(series, n_train):
    N = series.shape[0]
    if not 0 < n_train < N:
        raise ValueError("n_train out of range")
    order = torch.randperm(N, generator=torch.Generator().manual_seed(1234))   # shuffled, as in sklearn
    return series[order][:n_train], series[order][n_train:]


def fit_standardizer(train):
    mean = train.mean(0)
    std = train.std(0, unbiased=False)
    return mean, torch.where(std > 0, std, torch.ones_like(std))


def sliding_windows(series, window, horizon):
    N = series.shape[0]
    if window < 1 or horizon < 1:
        raise ValueError("window and horizon must be >= 1")
    M = N - window - horizon + 1
    if M < 1:
        raise ValueError("too short")
    X = series.unfold(0, window, 1)[:M].permute(0, 2, 1)
    return X, series[window - 1 + horizon:][:M]


def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mean, std = fit_standardizer(train)
    return (*sliding_windows((train - mean) / std, window, horizon),
            *sliding_windows((test - mean) / std, window, horizon), mean, std)
