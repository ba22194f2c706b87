"""A correct ablation written differently: configs copied through a JSON round trip and set by a
recursive helper; separate generators for the data, the init and the test set (each seeded from
config["seed"]); the accuracy counted with sum() / n; run_ablation with explicit loops."""
import json
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


def _with(config, keys, value):
    """A new dict: config with config[keys[0]]...[keys[-1]] = value (KeyError if a key is missing)."""
    head, rest = keys[0], keys[1:]
    if head not in config:
        raise KeyError(head)
    new = dict(config)
    new[head] = value if not rest else _with(config[head] if isinstance(config[head], dict) else {}, rest, value)
    return new


def make_ablation(base, factor, values):
    keys = factor.split(".")
    node = base
    for k in keys:
        if not isinstance(node, dict) or k not in node:
            raise ValueError(f"no entry {factor!r} in base")
        node = node[k]
    values = list(values)
    if len(values) < 2:
        raise ValueError("need two values or more")
    for i in range(len(values)):
        for j in range(i):
            if values[i] == values[j]:
                raise ValueError(f"value {values[i]!r} is repeated")
    return [_with(json.loads(json.dumps(base)), keys, v) for v in values]


def run_experiment(config):
    seed = int(config["seed"])
    n_train, n_test = config["data"]["n_train"], config["data"]["n_test"]
    T, V = config["data"]["seq_len"], config["data"]["vocab_size"]
    d, use_pe = config["model"]["d_model"], bool(config["model"]["positional_encoding"])
    data_g = torch.Generator().manual_seed(seed)
    init_g = torch.Generator().manual_seed(seed + 1_000_003)
    test_g = torch.Generator().manual_seed(seed + 2_000_006)
    X, y = order_task(n_train, T, V, generator=data_g)
    params = init_classifier(V, d, generator=init_g)
    X_test, y_test = order_task(n_test, T, V, generator=test_g)
    optimizer = torch.optim.Adam(params, lr=config["train"]["lr"])
    history = []
    for step in range(config["train"]["steps"]):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(classifier_logits(X, params, use_pe), y)
        history.append(float(loss.detach()))
        loss.backward()
        optimizer.step()
    with torch.inference_mode():
        hits = int((classifier_logits(X_test, params, use_pe).argmax(1) == y_test).sum())
    return {"test_accuracy": hits / n_test, "train_losses": history}


def run_ablation(base, factor, values, seeds):
    if factor == "seed":
        raise ValueError("ablate something else than the seed")
    seeds = list(seeds)
    if not seeds or len(set(seeds)) < len(seeds):
        raise ValueError("give at least one seed, each once")
    results = []
    for config in make_ablation(base, factor, values):
        row = []
        for s in seeds:
            run = json.loads(json.dumps(config))
            run["seed"] = s
            row.append(run_experiment(run))
        results.append(row)
    return results
