# exercise: bert_masking
# diagnosis: bm_labels_only_at_mask
# The label is written inside the [MASK] branch only: the random and the unchanged 10% get none.
import torch


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(list(special_ids)))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    flat = input_ids.flatten()
    n = flat.numel()
    ok = ~special_tokens_mask(flat[None], special_ids)[0]
    chosen = (torch.rand(n, generator=gen) < 0.15) & ok
    fate = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), n, replacement=True, generator=gen)
    random_ids = torch.randint(0, vocab_size, (n,), generator=gen)
    out = flat.clone()
    labels = torch.full_like(flat, -100)
    to_mask = chosen & (fate == 0)
    out[to_mask] = mask_id
    labels[to_mask] = flat[to_mask]
    to_rand = chosen & (fate == 1)
    out[to_rand] = random_ids[to_rand]
    return out.view_as(input_ids), labels.view_as(input_ids)
