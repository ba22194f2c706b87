"""A correct tiny_lm written differently: F.embedding, masks with torch.where, PE through exp/log,
the loss through F.cross_entropy(ignore_index), uniform init, training with AdamW."""
import math

import torch
import torch.nn.functional as F


def padding_mask(lengths, max_len=None):
    if bool((lengths < 0).any()):
        raise ValueError("negative length")
    T = int(lengths.max().item()) if max_len is None else int(max_len)
    if bool((lengths > T).any()):
        raise ValueError("length above max_len")
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def causal_mask(T, device=None):
    i = torch.arange(T, device=device)
    return i.view(-1, 1) >= i.view(1, -1)


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("odd d")
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.stack([torch.sin(pos * freq), torch.cos(pos * freq)], dim=-1).reshape(T, d)
    return pe.to(torch.float32)


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-1, -2)) * (1.0 / math.sqrt(Q.size(-1)))
    if mask is not None:
        scores = torch.where(mask, scores, torch.full_like(scores, -1e30))
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask, weights, torch.zeros_like(weights))
    return torch.matmul(weights, V), weights


def masked_cross_entropy(logits, targets, mask):
    if not bool(mask.any()):
        raise ValueError("no valid token")
    safe_logits = torch.where(mask.unsqueeze(-1), logits, torch.zeros_like(logits))
    safe_targets = torch.where(mask, targets, torch.full_like(targets, -100))
    return F.cross_entropy(safe_logits.flatten(0, 1), safe_targets.flatten(), ignore_index=-100)


def init_tiny_lm(vocab_size, d_model, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    bound = math.sqrt(3.0 / d_model)

    def u(*shape):
        return (torch.rand(*shape, generator=g) * 2 - 1) * bound

    return (u(vocab_size, d_model), u(d_model, d_model), u(d_model, d_model), u(d_model, d_model),
            u(d_model, d_model), u(vocab_size, d_model))


def tiny_lm_logits(tokens, lengths, params):
    emb, wq, wk, wv, wo, wout = params[0], params[1], params[2], params[3], params[4], params[5]
    T, d = tokens.size(1), emb.size(1)
    x = F.embedding(tokens, emb) * d ** 0.5
    x = x + sinusoidal_encoding(T, d).to(dtype=x.dtype, device=x.device).unsqueeze(0)
    allowed = padding_mask(lengths, T).unsqueeze(1) & causal_mask(T, tokens.device).unsqueeze(0)
    out, _ = scaled_dot_product_attention(F.linear(x, wq), F.linear(x, wk), F.linear(x, wv), allowed)
    return F.linear(x + F.linear(out, wo), wout)


def tiny_lm_loss(tokens, lengths, params):
    logits = tiny_lm_logits(tokens, lengths, params)
    keep = torch.arange(1, tokens.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
    return masked_cross_entropy(logits[:, :-1, :], tokens[:, 1:], keep)


def train_tiny_lm(seed, steps):
    g = torch.Generator().manual_seed(seed + 1000)
    rows, lens = [], []
    for _ in range(24):
        k = int(torch.randint(2, 5, (1,), generator=g))
        half = torch.randint(1, 10, (k,), generator=g).tolist()
        rows.append(half + half + [0] * (8 - 2 * k))
        lens.append(2 * k)
    tokens, lengths = torch.tensor(rows), torch.tensor(lens)
    params = [p.clone().requires_grad_(True) for p in init_tiny_lm(10, 16, seed)]
    opt = torch.optim.AdamW(params, lr=0.03, weight_decay=0.0)
    history = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = tiny_lm_loss(tokens, lengths, tuple(params))
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return history
