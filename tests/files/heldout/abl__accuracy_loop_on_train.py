# exercise: ablation
# diagnosis: ablation_accuracy_on_training_set
# The accuracy is counted in a loop, over the training sequences.
import copy
import math

import torch
import torch.nn.functional as F


def order_task(n, T, V, generator=None):
    tokens = torch.randint(3, V, (n, T), generator=generator)
    pos = torch.rand(n, T, generator=generator).argsort(dim=1)[:, :2]
    rows = torch.arange(n)
    tokens[rows, pos[:, 0]] = 1
    tokens[rows, pos[:, 1]] = 2
    return tokens, (pos[:, 0] < pos[:, 1]).long()


def init_classifier(V, d, generator=None):
    E = torch.randn(V, d, generator=generator)
    W = [torch.randn(d, d, generator=generator) / math.sqrt(d) for _ in range(4)]
    W_2 = torch.randn(2, d, generator=generator) / math.sqrt(d)
    return [p.requires_grad_() for p in [E, *W, W_2]]


def sinusoidal_encoding(T, d, base=10000.0):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    angle = t / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()


def classifier_logits(tokens, params, positional_encoding):
    E, W_q, W_k, W_v, W_1, W_2 = params
    n, T = tokens.shape
    d = E.shape[1]
    X = E[tokens]
    if positional_encoding:
        X = X + sinusoidal_encoding(T, d)
    scores = (X @ W_q.T) @ (X @ W_k.T).transpose(1, 2) / math.sqrt(d)
    H = X + torch.softmax(scores, dim=-1) @ (X @ W_v.T)
    return F.gelu(H @ W_1.T).mean(dim=1) @ W_2.T


def _walk(cfg, factor):
    keys = factor.split(".")
    node = cfg
    for k in keys[:-1]:
        if not isinstance(node, dict) or k not in node:
            raise ValueError(f"no entry {factor!r}")
        node = node[k]
    if not isinstance(node, dict) or keys[-1] not in node:
        raise ValueError(f"no entry {factor!r}")
    return node, keys[-1]


def make_ablation(base, factor, values):
    _walk(base, factor)
    if len(values) < 2:
        raise ValueError("need at least two values")
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if values[i] == values[j]:
                raise ValueError("repeated value")
    out = []
    for v in values:
        cfg = copy.deepcopy(base)
        node, key = _walk(cfg, factor)
        node[key] = v

        out.append(cfg)
    return out


def run_experiment(config):
    T, V = config["data"]["seq_len"], config["data"]["vocab_size"]
    d, pe = config["model"]["d_model"], config["model"]["positional_encoding"]
    steps, lr = config["train"]["steps"], config["train"]["lr"]
    gen = torch.Generator().manual_seed(config["seed"])
    Xtr, ytr = order_task(config["data"]["n_train"], T, V, generator=gen)
    params = init_classifier(V, d, generator=gen)
    Xte, yte = order_task(config["data"]["n_test"], T, V, generator=gen)
    opt = torch.optim.Adam(params, lr=lr)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(classifier_logits(Xtr, params, pe), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    correct = 0
    with torch.no_grad():
        for x, y in zip(Xtr, ytr):  # one sequence at a time
            correct += int(classifier_logits(x[None], params, pe).argmax(-1).item() == int(y))
    return {"train_losses": losses, "test_accuracy": correct / len(ytr)}


def run_ablation(base, factor, values, seeds):
    if factor == "seed":
        raise ValueError("the seed is not a factor")
    if not seeds or len(set(seeds)) < len(seeds):
        raise ValueError("seeds must be distinct and non-empty")
    configs = make_ablation(base, factor, values)
    results = []
    for cfg in configs:
        row = []
        for s in seeds:
            c = copy.deepcopy(cfg)
            c["seed"] = s
            row.append(run_experiment(c))
        results.append(row)
    return results
