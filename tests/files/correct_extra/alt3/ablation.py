"""A correct ablation written differently: copy.deepcopy then functools.reduce down the path;
mini-batch free Adam with a manual loop index; the test set drawn after training finished (from the
same generator, whose state training never touches); a results table filled in by index."""
import copy
import functools
import math

import torch
import torch.nn.functional as F

# ---- the given task and model (the notebook's locked cell) ----


def order_task(n, T, V, generator=None):
    """n sequences of T tokens: A = 1 and B = 2 once each, fillers in 3..V-1; label 1 iff A comes first."""
    tokens = torch.randint(3, V, (n, T), generator=generator)  # (n, T)  fillers
    pos = torch.rand(n, T, generator=generator).argsort(dim=1)[:, :2]  # (n, 2)  two distinct positions
    rows = torch.arange(n)
    tokens[rows, pos[:, 0]] = 1  # A
    tokens[rows, pos[:, 1]] = 2  # B
    return tokens, (pos[:, 0] < pos[:, 1]).long()  # (n, T), (n,)


def init_classifier(V, d, generator=None):
    """[E, W_q, W_k, W_v, W_1, W_2]: E (V, d), W_q..W_1 (d, d), W_2 (2, d); float32, requires grad."""
    E = torch.randn(V, d, generator=generator)  # (V, d)
    W = [torch.randn(d, d, generator=generator) / math.sqrt(d) for _ in range(4)]  # (d, d) each
    W_2 = torch.randn(2, d, generator=generator) / math.sqrt(d)  # (2, d)
    return [p.requires_grad_() for p in [E, *W, W_2]]


def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table, interleaved sin (even columns) / cos (odd columns)."""
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    angle = t / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()  # (T, d)


def classifier_logits(tokens, params, positional_encoding):
    """tokens (n, T) -> logits (n, 2): embedding (+ PE), bidirectional attention, mean over positions."""
    E, W_q, W_k, W_v, W_1, W_2 = params
    n, T = tokens.shape
    d = E.shape[1]
    X = E[tokens]  # (n, T, d)
    if positional_encoding:
        X = X + sinusoidal_encoding(T, d)  # (n, T, d)  the only place where position enters
    scores = (X @ W_q.T) @ (X @ W_k.T).transpose(1, 2) / math.sqrt(d)  # (n, T, T)  no mask: bidirectional
    H = X + torch.softmax(scores, dim=-1) @ (X @ W_v.T)  # (n, T, d)  residual
    return F.gelu(H @ W_1.T).mean(dim=1) @ W_2.T  # (n, 2)  GELU never dies; the mean forgets the order


# ---- the exercise ----


def _parent(config, factor):
    *path, last = factor.split(".")
    try:
        parent = functools.reduce(lambda node, key: node[key], path, config)
    except (KeyError, TypeError):
        parent = None
    if not isinstance(parent, dict) or last not in parent:
        raise ValueError(f"unknown factor {factor!r}")
    return parent, last


def make_ablation(base, factor, values):
    _parent(base, factor)
    n = len(values)
    if n < 2:
        raise ValueError("an ablation needs >= 2 values")
    if any(values.index(v) != i for i, v in enumerate(values)):
        raise ValueError("duplicate value")
    out = []
    for v in values:
        c = copy.deepcopy(base)
        parent, last = _parent(c, factor)
        parent[last] = v
        out.append(c)
    return out


def run_experiment(config):
    cfg = copy.deepcopy(config)
    g = torch.Generator().manual_seed(cfg["seed"])
    T, V = cfg["data"]["seq_len"], cfg["data"]["vocab_size"]
    X, y = order_task(cfg["data"]["n_train"], T, V, generator=g)
    params = init_classifier(V, cfg["model"]["d_model"], generator=g)
    pe = cfg["model"]["positional_encoding"]
    opt = torch.optim.Adam(params, lr=cfg["train"]["lr"], betas=(0.9, 0.999))
    losses = [0.0] * cfg["train"]["steps"]
    k = 0
    while k < cfg["train"]["steps"]:
        loss = F.cross_entropy(classifier_logits(X, params, pe), y, reduction="sum") / len(y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[k] = loss.item()
        k += 1
    X_test, y_test = order_task(cfg["data"]["n_test"], T, V, generator=g)  # drawn after training
    with torch.no_grad():
        acc = (classifier_logits(X_test, params, pe).argmax(dim=1) == y_test).float().sum().item() / len(y_test)
    return {"train_losses": losses, "test_accuracy": acc}


def run_ablation(base, factor, values, seeds):
    if factor == "seed":
        raise ValueError("the seed is not a factor")
    if not seeds or sorted(set(seeds)) != sorted(seeds):
        raise ValueError("seeds must be distinct and non-empty")
    configs = make_ablation(base, factor, values)
    table = [[None] * len(seeds) for _ in configs]
    for i, c in enumerate(configs):
        for j, s in enumerate(seeds):
            run = copy.deepcopy(c)
            run["seed"] = s
            table[i][j] = run_experiment(run)
    return table
