"""Correct, written differently: torch.multinomial picks the fate of each selected token (0 mask, 1 random, 2 keep)."""
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(sorted(set(special_ids)), dtype=torch.long))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    flat = input_ids.reshape(-1)
    n = flat.numel()
    ok = ~special_tokens_mask(flat, special_ids)
    chosen = (torch.rand(n, generator=gen) < 0.15) & ok
    fate = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), n, replacement=True, generator=gen)
    random_ids = torch.randint(low=0, high=vocab_size, size=(n,), generator=gen)
    out = flat.clone()
    out[chosen & (fate == 0)] = mask_id
    out[chosen & (fate == 1)] = random_ids[chosen & (fate == 1)]
    labels = torch.full_like(flat, -100)
    labels[chosen] = flat[chosen]
    return out.view_as(input_ids), labels.view_as(input_ids)
