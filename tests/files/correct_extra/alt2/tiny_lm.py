"""A correct tiny_lm written differently: one-hot embedding, explicit loops over the batch for the
masks, a float64 sinusoid, log_softmax + gather for the loss, plain SGD with momentum on a repeat task."""
import math

import torch


def padding_mask(lengths, max_len=None):
    if (lengths < 0).any():
        raise ValueError("lengths must be non-negative")
    T = max_len if max_len is not None else int(lengths.max())
    if (lengths > T).any():
        raise ValueError("a length exceeds max_len")
    mask = torch.zeros(len(lengths), T, dtype=torch.bool, device=lengths.device)
    for b, n in enumerate(lengths.tolist()):
        mask[b, :n] = True
    return mask


def causal_mask(T, device=None):
    return ~torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 == 1:
        raise ValueError("d must be even")
    pe = torch.zeros(T, d, dtype=torch.float64)
    for i in range(d // 2):
        w = 1.0 / base ** (2 * i / d)
        pe[:, 2 * i] = torch.sin(torch.arange(T, dtype=torch.float64) * w)
        pe[:, 2 * i + 1] = torch.cos(torch.arange(T, dtype=torch.float64) * w)
    return pe.float()


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), -math.inf)
        m = s.amax(dim=-1, keepdim=True).clamp(min=-1e30).detach()
        e = torch.exp(s - m) * mask
        w = e / e.sum(dim=-1, keepdim=True).clamp(min=1e-30)
    else:
        w = torch.softmax(s, dim=-1)
    return w @ V, w


def masked_cross_entropy(logits, targets, mask):
    n = int(mask.sum())
    if n == 0:
        raise ValueError("empty mask")
    lp = torch.log_softmax(logits[mask], dim=-1)
    return -lp.gather(1, targets[mask].unsqueeze(1)).sum() / n


def init_tiny_lm(vocab_size, d_model, seed):
    gen = torch.Generator().manual_seed(seed)
    scale = d_model ** -0.5
    E = torch.randn(vocab_size, d_model, generator=gen) * scale
    mats = [torch.randn(d_model, d_model, generator=gen) * scale for _ in range(4)]
    W_out = torch.randn(vocab_size, d_model, generator=gen) * scale
    return tuple([E] + mats + [W_out])


def tiny_lm_logits(tokens, lengths, params):
    E, W_q, W_k, W_v, W_o, W_out = params
    V, d = E.shape
    B, T = tokens.shape
    onehot = torch.nn.functional.one_hot(tokens, V).to(E.dtype)  # (B, T, V)
    X = (onehot @ E) * math.sqrt(d) + sinusoidal_encoding(T, d).to(E.dtype)
    mask = torch.stack([causal_mask(T) & padding_mask(lengths[b:b + 1], T) for b in range(B)])  # (B, T, T)
    Q, K, Vv = X @ W_q.t(), X @ W_k.t(), X @ W_v.t()
    A, _ = scaled_dot_product_attention(Q, K, Vv, mask)
    return (X + A @ W_o.t()) @ W_out.t()


def tiny_lm_loss(tokens, lengths, params):
    T = tokens.shape[1]
    logits = tiny_lm_logits(tokens, lengths, params)
    mask = padding_mask(lengths - 1, T - 1)  # position t counts when t < length - 1
    return masked_cross_entropy(logits[:, : T - 1], tokens[:, 1:], mask)


def train_tiny_lm(seed, steps):
    gen = torch.Generator().manual_seed(2 * seed + 7)
    B, T, V = 16, 6, 6
    k = torch.randint(1, 4, (B,), generator=gen)
    tokens = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        x = torch.randint(1, V, (int(k[b]),), generator=gen)
        tokens[b, : 2 * int(k[b])] = torch.cat([x, x])
    lengths = 2 * k
    params = [p.requires_grad_() for p in init_tiny_lm(V, 8, seed)]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    out = []
    for _ in range(steps):
        loss = tiny_lm_loss(tokens, lengths, params)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out
