"""Correct, written differently: original BERT's fixed count per sequence (round(0.15 n) positions by randperm),
random ids drawn from the ordinary (non-special) ids only."""
import torch


def special_tokens_mask(input_ids, special_ids):
    return (input_ids[..., None] == torch.as_tensor(special_ids, dtype=input_ids.dtype)).any(-1)


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(int(seed))
    B, T = input_ids.shape
    special = special_tokens_mask(input_ids, special_ids)
    selected = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        cand = (~special[b]).nonzero().flatten()
        k = int(round(0.15 * len(cand)))
        if k:
            selected[b, cand[torch.randperm(len(cand), generator=g)[:k]]] = True
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in set(special_ids)])
    u = torch.rand(B, T, generator=g)
    rnd = ordinary[torch.randint(len(ordinary), (B, T), generator=g)]
    inputs = input_ids.clone()
    inputs[selected & (u < 0.8)] = mask_id
    pick = selected & (u >= 0.8) & (u < 0.9)
    inputs[pick] = rnd[pick]
    labels = input_ids.masked_fill(~selected, -100)
    return inputs, labels
