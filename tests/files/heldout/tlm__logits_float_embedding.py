# exercise: tiny_lm
# diagnosis: tiny_lm_logits_cast_to_float32
# The embedding cast to float32 to match the encoding: float64 params give float32 logits.
import math

import torch
import torch.nn.functional as F


def padding_mask(lengths, max_len=None):
    if bool((lengths < 0).any()):
        raise ValueError("lengths must be >= 0")
    T = max_len if max_len is not None else int(lengths.max())
    if bool((lengths > T).any()):
        raise ValueError("length > max_len")
    out = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        out[b, :n] = True
    return out


def causal_mask(T, device=None):
    return torch.ones(T, T, device=device).tril().bool()


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 == 1:
        raise ValueError("odd d")
    pe = torch.zeros(T, d, dtype=torch.float64)
    for t in range(T):
        for i in range(d // 2):
            a = t / base ** (2 * i / d)
            pe[t, 2 * i], pe[t, 2 * i + 1] = math.sin(a), math.cos(a)
    return pe.float()


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-1, -2) * Q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.full_like(scores, -1e30))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ V, weights


def masked_cross_entropy(logits, targets, mask):
    n = int(mask.sum())
    if n == 0:
        raise ValueError("no valid token")
    logp = torch.log_softmax(logits[mask], dim=-1)
    return -logp.gather(1, targets[mask][:, None]).sum() / n


def init_tiny_lm(vocab_size, d_model, seed):
    gen = torch.Generator()
    gen.manual_seed(seed)
    E = torch.randn(vocab_size, d_model, generator=gen) / d_model ** 0.5
    Ws = [torch.randn(d_model, d_model, generator=gen) / d_model ** 0.5 for _ in range(4)]
    W_out = torch.randn(vocab_size, d_model, generator=gen) / d_model ** 0.5
    return (E, *Ws, W_out)


def tiny_lm_logits(tokens, lengths, params):
    emb, w_q, w_k, w_v, w_o, w_out = params
    T, d = tokens.shape[1], emb.shape[1]
    x = F.embedding(tokens, emb).float() * math.sqrt(d)
    x = x + sinusoidal_encoding(T, d)[None]
    w_q, w_k, w_v, w_o, w_out = (w.float() for w in (w_q, w_k, w_v, w_o, w_out))
    allowed = padding_mask(lengths, T)[:, None, :] & causal_mask(T)[None, :, :]
    a, _ = scaled_dot_product_attention(F.linear(x, w_q), F.linear(x, w_k), F.linear(x, w_v), allowed)
    return F.linear(x + F.linear(a, w_o), w_out)


def tiny_lm_loss(tokens, lengths, params):
    T = tokens.shape[1]
    logits = tiny_lm_logits(tokens, lengths, params)
    targets = tokens[:, 1:].masked_fill(~padding_mask(lengths, T)[:, 1:], -100)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


def train_tiny_lm(seed, steps):
    gen = torch.Generator().manual_seed(1000 + seed)
    rows, lens = [], []
    for _ in range(24):
        k = int(torch.randint(2, 5, (), generator=gen))
        half = torch.randint(1, 10, (k,), generator=gen).tolist()
        rows.append(half + half + [0] * (8 - 2 * k))
        lens.append(2 * k)
    tokens, lengths = torch.tensor(rows), torch.tensor(lens)
    params = tuple(p.requires_grad_() for p in init_tiny_lm(10, 16, seed))
    opt = torch.optim.AdamW(params, lr=0.03, weight_decay=0.0)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = tiny_lm_loss(tokens, lengths, params)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses
