"""A correct ablation written differently: make_ablation walks the path recursively and checks repeats
with list.count (== only, so list- and dict-valued factors such as "model.sizes": [[8, 16], [16, 32]]
work); run_experiment draws the test set from a generator of its own (seeded from config["seed"]) and
measures the accuracy as (pred == y).float().mean().item(); run_ablation over itertools.product."""
import copy
import itertools
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


def _parent(config, keys):
    """The dict that holds the last key of the path, walking down recursively; None if there is none."""
    if len(keys) == 1:
        return config if isinstance(config, dict) and keys[0] in config else None
    child = config.get(keys[0]) if isinstance(config, dict) else None
    return _parent(child, keys[1:]) if isinstance(child, dict) else None


def make_ablation(base, factor, values):
    keys = factor.split(".")
    if _parent(base, keys) is None:
        raise ValueError(f"{factor!r} is not an entry of base")
    values = list(values)
    if len(values) < 2:
        raise ValueError("an ablation needs two values or more")
    if any(values.count(v) > 1 for v in values):  # == only: lists and dicts are fine
        raise ValueError(f"repeated value in {values!r}")
    configs = []
    for v in values:
        config = copy.deepcopy(base)
        _parent(config, keys)[keys[-1]] = copy.deepcopy(v)
        configs.append(config)
    return configs


def run_experiment(config):
    seed = config["seed"]
    data, model, train = config["data"], config["model"], config["train"]
    T, V = data["seq_len"], data["vocab_size"]
    pe = model["positional_encoding"]
    g = torch.Generator().manual_seed(seed)  # training data, then the init
    X, y = order_task(data["n_train"], T, V, generator=g)
    params = init_classifier(V, model["d_model"], generator=g)
    g_test = torch.Generator().manual_seed(seed + 7919)  # the test set: a generator of its own
    X_test, y_test = order_task(data["n_test"], T, V, generator=g_test)
    opt = torch.optim.Adam(params, lr=train["lr"])
    train_losses = []
    for _ in range(train["steps"]):
        loss = F.cross_entropy(classifier_logits(X, params, pe), y)
        train_losses.append(loss.item())  # before this step's update
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        pred = classifier_logits(X_test, params, pe).argmax(dim=-1)
    return {"train_losses": train_losses, "test_accuracy": (pred == y_test).float().mean().item()}


def run_ablation(base, factor, values, seeds):
    if factor == "seed":
        raise ValueError("the seed repeats the experiment; it is not a factor")
    seeds = list(seeds)
    if not seeds or any(seeds.count(s) > 1 for s in seeds):
        raise ValueError("at least one seed, each once")
    configs = make_ablation(base, factor, values)
    flat = [run_experiment({**c, "seed": s}) for c, s in itertools.product(configs, seeds)]
    return [flat[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(configs))]
