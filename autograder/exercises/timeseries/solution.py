"""Reference solution: the information boundary in time-series preprocessing / 参考答案：时间序列预处理的信息边界.

The test period is the future: nothing computed for training may depend on it.
    split         train = series[:n_train], test = series[n_train:]   (in time order, never shuffled)
    standardiser  mean, std over the training period only (population std; a constant column gets std 1)
    windows       X[i] = series[i : i + window],  y[i] = series[i + window - 1 + horizon]
"""
import torch


def chronological_split(series, n_train):
    """train = series[:n_train], test = series[n_train:], in time order."""
    N = series.shape[0]  # series: (N, F)
    if not 1 <= n_train < N:
        raise ValueError(f"n_train must be in [1, N - 1] = [1, {N - 1}], got {n_train}")
    return series[:n_train], series[n_train:]  # (n_train, F), (N - n_train, F)


def fit_standardizer(train):
    """Per-feature mean and population std of the training period; a std of 0 becomes 1."""
    mean = train.mean(dim=0)  # (F,)
    std = train.std(dim=0, correction=0)  # (F,)  population std, as sklearn's StandardScaler
    std = torch.where(std == 0, torch.ones_like(std), std)  # a constant feature: divide by 1
    return mean, std


def sliding_windows(series, window, horizon):
    """X[i] = series[i : i+window], y[i] = series[i + window - 1 + horizon]."""
    N = series.shape[0]  # series: (N, F)
    if window < 1 or horizon < 1:
        raise ValueError(f"window and horizon must be >= 1, got window={window}, horizon={horizon}")
    M = N - window - horizon + 1  # number of windows
    if M < 1:
        raise ValueError(f"a series of length {N} has no window of {window} steps with a target {horizon} ahead")
    X = torch.stack([series[i:i + window] for i in range(M)])  # (M, window, F)
    y = series[window - 1 + horizon:window - 1 + horizon + M]  # (M, F)
    return X, y


def make_datasets(series, n_train, window, horizon):
    """Split, standardise with training statistics, then window each period on its own."""
    train, test = chronological_split(series, n_train)  # (n_train, F), (N - n_train, F)
    mean, std = fit_standardizer(train)  # (F,), (F,)  from the training period only
    X_train, y_train = sliding_windows((train - mean) / std, window, horizon)
    X_test, y_test = sliding_windows((test - mean) / std, window, horizon)
    return X_train, y_train, X_test, y_test, mean, std
