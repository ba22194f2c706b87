# exercise: tiny_lm
# diagnosis: sdpa_no_scaling
# The pasted attention forgets the 1/sqrt(dk) scale: the attention exercise's catalogued mistake, in a pasted part.
import math

import torch
import torch.nn.functional as F


def padding_mask(lengths, max_len=None):
    if (lengths < 0).any():
        raise ValueError("negative length")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError("a length is above max_len")
    return torch.arange(T).expand(len(lengths), T) < lengths.unsqueeze(1)


def causal_mask(T, device=None):
    r = torch.arange(T, device=device)
    return r[:, None] >= r[None, :]


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    ang = pos * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack((ang.sin(), ang.cos()), -1).flatten(1).float()


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = torch.einsum("...qd,...kd->...qk", Q, K)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, -1)
    if mask is not None:
        w = torch.nan_to_num(w, nan=0.0).masked_fill(~mask, 0.0)
    return torch.einsum("...qk,...kv->...qv", w, V), w


def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("empty mask")
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum") / mask.sum()


def init_tiny_lm(vocab_size, d_model, seed):
    g = torch.Generator().manual_seed(seed)
    std = 1 / math.sqrt(d_model)
    shapes = [(vocab_size, d_model)] + [(d_model, d_model)] * 4 + [(vocab_size, d_model)]
    return tuple(torch.randn(*s, generator=g) * std for s in shapes)


def tiny_lm_logits(tokens, lengths, params):
    E, Wq, Wk, Wv, Wo, Wout = params
    B, T = tokens.shape
    d = E.shape[-1]
    x = E[tokens] * d ** 0.5 + sinusoidal_encoding(T, d).to(E.dtype)
    m = causal_mask(T).unsqueeze(0) & padding_mask(lengths, T).unsqueeze(1)
    q, k, v = (torch.einsum("btd,ed->bte", x, W) for W in (Wq, Wk, Wv))
    a, _ = scaled_dot_product_attention(q, k, v, m)
    h = x + torch.einsum("bte,de->btd", a, Wo)
    return torch.einsum("btd,vd->btv", h, Wout)


def tiny_lm_loss(tokens, lengths, params):
    logits = tiny_lm_logits(tokens, lengths, params)
    T = tokens.shape[1]
    nxt = torch.arange(1, T)[None, :] < lengths[:, None]
    return masked_cross_entropy(logits[:, :-1], tokens[:, 1:], nxt)


def train_tiny_lm(seed, steps):
    g = torch.Generator().manual_seed(seed)
    B, T = 32, 8
    tokens = torch.zeros(B, T, dtype=torch.long)
    lengths = torch.zeros(B, dtype=torch.long)
    for b in range(B):
        k = int(torch.randint(2, 5, (1,), generator=g))
        half = torch.randint(1, 10, (k,), generator=g)
        tokens[b, :2 * k] = torch.cat([half, half])
        lengths[b] = 2 * k
    params = [p.clone().requires_grad_(True) for p in init_tiny_lm(10, 16, seed)]
    opt = torch.optim.Adam(params, lr=0.02)
    out = []
    for _ in range(steps):
        loss = tiny_lm_loss(tokens, lengths, params)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out
