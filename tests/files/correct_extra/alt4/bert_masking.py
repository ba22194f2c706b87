"""Correct, written differently (and slowly): a plain Python loop over every token, as a beginner writes it."""
import torch


def special_tokens_mask(input_ids, special_ids):
    B, T = input_ids.shape
    out = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        for t in range(T):
            out[b, t] = int(input_ids[b, t]) in special_ids
    return out


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    ids = input_ids.tolist()
    special = set(special_ids)
    u = torch.rand(B, T, generator=g).tolist()
    v = torch.rand(B, T, generator=g).tolist()
    r = torch.randint(0, vocab_size, (B, T), generator=g).tolist()
    inputs = [row[:] for row in ids]
    labels = [[-100] * T for _ in range(B)]
    for b in range(B):
        for t in range(T):
            if ids[b][t] in special or u[b][t] >= 0.15:
                continue
            labels[b][t] = ids[b][t]
            if v[b][t] < 0.8:
                inputs[b][t] = mask_id
            elif v[b][t] < 0.9:
                inputs[b][t] = r[b][t]
    return torch.tensor(inputs), torch.tensor(labels)
