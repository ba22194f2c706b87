"""Reference solution: a tiny causal language model / 参考答案：一个很小的因果语言模型.

Assembled from the parts of the earlier exercises (padding_mask, causal_mask, sinusoidal_encoding,
scaled_dot_product_attention, masked_cross_entropy; the notebook asks the student to paste their
own) and a params tuple of tensors, no nn.Module:

    params = (E, W_q, W_k, W_v, W_o, W_out)    E (V, d), W_q..W_o (d, d), W_out (V, d)
    X      = sqrt(d) * E[tokens] + PE           (B, T, d)
    A      = attention(X W_q^T, X W_k^T, X W_v^T, mask = causal and key is a real token)
    H      = X + A W_o^T                        residual
    logits = H W_out^T                          (B, T, V)
    loss   = masked cross-entropy of logits[:, t] against tokens[:, t + 1], t + 1 < length
"""
import math

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- the parts (earlier exercises)


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table, interleaved sin (even columns) / cos (odd columns)."""
    if d % 2 != 0:
        raise ValueError(f"d must be even, got d={d}")
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (d/2,)  = 2i
    angle = t / base ** (two_i / d)  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even columns
    pe[:, 1::2] = torch.cos(angle)  # odd columns
    return pe.float()  # (T, d)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv) -> out (..., Tq, dv), weights (..., Tq, Tk)."""
    dk = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(dk)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # blocked keys -> -inf
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)  over keys
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # exact 0; an all-blocked row's NaN becomes 0
    return weights @ V, weights  # (..., Tq, dv), (..., Tq, Tk)


def masked_cross_entropy(logits, targets, mask):
    """logits (B, T, V), targets (B, T), mask (B, T) -> scalar, mean over valid tokens."""
    n_valid = mask.sum()
    if n_valid == 0:
        raise ValueError("mask has no valid token: the loss would be 0/0")
    V = logits.shape[-1]
    valid_logits = logits[mask]  # (N, V)  padding removed before anything is computed
    valid_targets = targets[mask]  # (N,)
    losses = F.cross_entropy(valid_logits.reshape(-1, V), valid_targets, reduction="none")  # (N,)
    return losses.sum() / n_valid


# ---------------------------------------------------------------- the model


def init_tiny_lm(vocab_size, d_model, seed):
    """(E, W_q, W_k, W_v, W_o, W_out) float32, drawn from torch.Generator().manual_seed(seed)."""
    g = torch.Generator().manual_seed(seed)
    V, d = vocab_size, d_model
    E = torch.randn(V, d, generator=g) / math.sqrt(d)  # (V, d)  sqrt(d) * E[token] has entries ~ 1
    W_q, W_k, W_v, W_o = (torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(4))  # (d, d) each
    W_out = torch.randn(V, d, generator=g) / math.sqrt(d)  # (V, d)
    return E, W_q, W_k, W_v, W_o, W_out


def tiny_lm_logits(tokens, lengths, params):
    """tokens (B, T) int64, lengths (B,) -> logits (B, T, V); position t sees tokens 0..t only."""
    E, W_q, W_k, W_v, W_o, W_out = params
    B, T = tokens.shape
    d = E.shape[1]
    X = math.sqrt(d) * E[tokens] + sinusoidal_encoding(T, d).to(E.dtype)  # (B, T, d)
    mask = causal_mask(T, device=tokens.device)[None] & padding_mask(lengths, T)[:, None, :]  # (B, T, T)
    A, _ = scaled_dot_product_attention(X @ W_q.T, X @ W_k.T, X @ W_v.T, mask)  # (B, T, d)
    H = X + A @ W_o.T  # (B, T, d)  residual
    return H @ W_out.T  # (B, T, V)


def tiny_lm_loss(tokens, lengths, params):
    """Next-token cross-entropy: logits[:, t] predict tokens[:, t + 1] for t + 1 < length."""
    T = tokens.shape[1]
    logits = tiny_lm_logits(tokens, lengths, params)  # (B, T, V)
    targets = tokens[:, 1:]  # (B, T-1)  the next token
    mask = padding_mask(lengths, T)[:, 1:]  # (B, T-1)  the next token is a real one
    return masked_cross_entropy(logits[:, :-1], targets, mask)


def train_tiny_lm(seed, steps):
    """Adam on the copy task, everything seeded by `seed`; returns the `steps` training losses."""
    # the copy task: k random tokens in 1..9, then the same k again (k = 2..4), padded with 0 to T = 8
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(2, 5, (32, 1), generator=g)  # (32, 1)  half lengths
    first = torch.randint(1, 10, (32, 4), generator=g)  # (32, 4)  the first half, up to 4 tokens
    t = torch.arange(8)  # (8,)
    src = torch.where(t < k, t, t - k).clamp(max=3)  # (32, 8)  position t copies first[t] or first[t - k]
    tokens = torch.where(t < 2 * k, first.gather(1, src), 0)  # (32, 8)
    lengths = 2 * k[:, 0]  # (32,)
    params = tuple(p.requires_grad_() for p in init_tiny_lm(10, 16, seed))
    opt = torch.optim.Adam(params, lr=0.02)
    losses = []
    for _ in range(steps):
        loss = tiny_lm_loss(tokens, lengths, params)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
